"""The generated facade modules are what ``scripts/gen_facades.py`` makes of the trio classes now.

``make lint`` runs the script with ``--check``; this test does the same in-process, so that a trio
signature or docstring changed without regenerating fails ``pytest`` too. It also checks that
``--check`` notices a stale file, and that the generator refuses a description that misses a
member of a trio class.
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
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_the_generated_modules_are_current(gen: ModuleType) -> None:
    diffs = gen.stale()
    assert diffs == {}, "stale; run `python scripts/gen_facades.py`:\n" + "".join(diffs.values())


def test_check_reports_a_stale_file_with_a_diff(gen: ModuleType, tmp_path: Path) -> None:
    for facade in gen.FACADES:
        (tmp_path / facade.out).parent.mkdir(parents=True)
        shutil.copy(gen.ROOT / facade.out, tmp_path / facade.out)
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
