"""The generated facade modules are what ``scripts/gen_facades.py`` makes of the trio classes now.

``make lint`` runs the script with ``--check``; this test does the same in-process, so that a trio
signature or docstring changed without regenerating fails ``pytest`` too. It also checks that
``--check`` notices a stale file (or re-export block), and that the generator refuses a description
that misses a member of a trio class or excludes a name the package lacks.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "gen_facades.py"


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_facades", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (dataclasses look their module up)
    sys.path.insert(0, str(SCRIPT.parent))  # its description and reader, as when it runs as a script
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(SCRIPT.parent))
        del sys.modules[spec.name]
    return module


def test_the_generated_modules_are_current(gen: ModuleType) -> None:
    diffs = gen.stale()
    assert diffs == {}, "stale; run `python scripts/gen_facades.py`:\n" + "".join(diffs.values())


def test_check_reports_a_stale_file_with_a_diff(gen: ModuleType, tmp_path: Path) -> None:
    for facade in gen.FACADES:
        (tmp_path / facade.out).parent.mkdir(parents=True)
        shutil.copy(gen.ROOT / facade.out, tmp_path / facade.out)
        shutil.copy(gen.ROOT / facade.init, tmp_path / facade.init)
    edited = tmp_path / gen.FACADES[1].out
    edited.write_text(edited.read_text().replace("self._call(", "self._call_sync(", 1))

    diffs = gen.stale(tmp_path)

    assert list(diffs) == [gen.FACADES[1].out]
    assert "-        return self._call_sync(" in diffs[gen.FACADES[1].out]
    assert "+        return self._call(" in diffs[gen.FACADES[1].out]


def test_a_member_left_out_of_the_description_stops_the_generator(
    gen: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    producer = gen.CLIENTS["Producer"]
    members = {name: member for name, member in producer.members.items() if name != "recall"}
    clients = {**gen.CLIENTS, "Producer": dataclasses.replace(producer, members=members)}
    monkeypatch.setattr(gen, "CLIENTS", clients)

    with pytest.raises(gen.DescriptionError, match=r"misses \['recall'\]"):
        gen.render(gen.FACADES[0])


def test_a_deprecated_alias_warns_in_the_facade_and_bridges_the_new_name(gen: ModuleType) -> None:
    text = gen.render(gen.FACADES[1])
    alias = text[text.index("    def seek_to_begin(") :]
    alias = alias[: alias.index("\n    def ", 1)]
    assert "warnings.warn(" in alias
    assert "LitePullConsumer.seek_to_begin is deprecated; use seek_to_beginning" in alias
    assert "self._call(self._client.seek_to_beginning, mq)" in alias
    assert "self._client.seek_to_begin," not in alias  # the trio alias would warn a second time


def test_an_alias_of_a_method_with_another_signature_stops_the_generator(
    gen: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    lite = gen.CLIENTS["LitePullConsumer"]
    members = {**lite.members, "seek_to_begin": gen.Member(alias_of="seek_to_timestamp")}
    clients = {**gen.CLIENTS, "LitePullConsumer": dataclasses.replace(lite, members=members)}
    monkeypatch.setattr(gen, "CLIENTS", clients)

    with pytest.raises(
        gen.DescriptionError, match="an alias of seek_to_timestamp, which has another signature"
    ):
        gen.render(gen.FACADES[0])


def test_a_deprecated_alias_warns_at_its_caller_and_calls_the_trio_implementation(gen: ModuleType) -> None:
    text = gen.render(gen.FACADES[1])
    alias = text[text.index("    def owned_queues(") :]
    alias = alias[: alias.index("\n    def ", 1)]
    assert "warnings.warn(" in alias
    assert "DeprecationWarning" in alias
    assert "stacklevel=2" in alias
    assert "use sorted(PushConsumer.assignment())" in alias
    assert "self._read(self._client._owned_queues)" in alias  # the implementation: no second warning
    assert "\nimport warnings\n" in text


@pytest.mark.parametrize("name", ["client_id", "register_listener"])
def test_a_deprecated_alias_needs_a_private_implementation_method(
    gen: ModuleType, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    push = gen.CLIENTS["PushConsumer"]
    members = {
        **push.members,
        name: gen.Member(deprecated="old"),
    }  # a property; a method with no _register_listener
    monkeypatch.setattr(
        gen, "CLIENTS", {**gen.CLIENTS, "PushConsumer": dataclasses.replace(push, members=members)}
    )

    with pytest.raises(gen.DescriptionError, match=rf"PushConsumer\.{name}: a deprecated alias is a method"):
        gen.render(gen.FACADES[0])


def test_check_reports_a_stale_reexport_block(gen: ModuleType, tmp_path: Path) -> None:
    for facade in gen.FACADES:
        (tmp_path / facade.out).parent.mkdir(parents=True)
        shutil.copy(gen.ROOT / facade.out, tmp_path / facade.out)
        shutil.copy(gen.ROOT / facade.init, tmp_path / facade.init)
    edited = tmp_path / gen.FACADES[0].init
    edited.write_text(edited.read_text().replace('    "Message",\n', "", 1))

    diffs = gen.stale(tmp_path)

    assert list(diffs) == [gen.FACADES[0].init]
    assert '+    "Message",' in diffs[gen.FACADES[0].init]


def test_the_reexport_block_is_the_package_names_but_the_exclusions(
    gen: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    init = gen.ROOT / gen.FACADES[1].init
    monkeypatch.setattr(gen, "NOT_IN_FACADES", {"__version__": "the package's"})

    text = gen.render_init(gen.FACADES[1], init.read_text())

    assert "    send_many,\n" in text
    assert '    "SendCounts",\n' in text
    assert "__version__" not in text
    assert text.startswith(init.read_text().partition(gen.BLOCK_BEGIN)[0])  # the docstring is kept


def test_an_exclusion_the_package_lacks_stops_the_generator(
    gen: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gen, "NOT_IN_FACADES", {**gen.NOT_IN_FACADES, "gone": "renamed"})

    with pytest.raises(gen.DescriptionError, match=r"names \['gone'\], which rocketmq_py.__all__ lacks"):
        gen.reexported()


def test_an_init_without_the_block_stops_the_generator(gen: ModuleType) -> None:
    with pytest.raises(gen.DescriptionError, match="no block from"):
        gen.render_init(gen.FACADES[0], '"""A package."""\n')
