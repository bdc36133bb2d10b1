"""Single-file Java programs run compiled once per source text (``rocketmq_py.testing._java_programs``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketmq_py.errors import ClusterError
from rocketmq_py.testing._distribution import find_java
from rocketmq_py.testing._java_programs import compiled
from rocketmq_py.testing._tools import run_java

HELLO = """public class Hello {
    public static void main(String[] args) { System.out.println("hello " + String.join(",", args) + " %s"); }
}
"""


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ROCKETMQ_PY_CACHE", str(tmp_path / "cache"))
    if not Path(find_java()).with_name("javac").is_file():
        pytest.fail("the suite needs a JDK (javac beside java)")
    return tmp_path / "cache"


def test_a_program_compiles_once_and_runs_with_its_arguments(tmp_path: Path, cache: Path) -> None:
    source = tmp_path / "Hello.java"
    source.write_text(HELLO % "v1")
    found = compiled(source, "")
    assert found is not None
    classpath, main = found
    assert main == "Hello"
    assert classpath.startswith(str(cache / "java-programs"))
    built = next((cache / "java-programs").glob("Hello-*/Hello.class"))
    stamp = built.stat().st_mtime_ns
    assert compiled(source, "") == found
    assert built.stat().st_mtime_ns == stamp  # not compiled again
    assert [p.name for p in (cache / "java-programs").iterdir()] == [built.parent.name]  # no leftovers

    result = run_java("", str(source), ["a", "b"], home=tmp_path / "home")
    assert result.ok, result.output
    assert result.output.strip() == "hello a,b v1"
    assert "Hello.java" not in " ".join(result.argv)  # the class, not the source

    source.write_text(HELLO % "v2")  # another text: another build
    assert compiled(source, "") != found
    assert run_java("", str(source), [], home=tmp_path / "home").output.strip() == "hello  v2"


def test_a_source_javac_refuses_says_why(tmp_path: Path, cache: Path) -> None:
    source = tmp_path / "Broken.java"
    source.write_text("public class Broken { void f() { undefined(); } }\n")
    with pytest.raises(ClusterError, match="cannot find symbol"):
        compiled(source, "")
    assert not list((cache / "java-programs").iterdir())
