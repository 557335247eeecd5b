"""yowasp_ready: a YoWASP tool's first-call compile runs once, not once per process."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from hwapprox.rtl_sim import runner


def _fake_tool(tmp_path: Path) -> tuple[Path, Path]:
    """An executable that logs 'start' and 'end' around a short sleep (a compile)."""
    log = tmp_path / "calls.log"
    exe = tmp_path / "yowasp-fake"
    exe.write_text(f"#!/bin/sh\necho start >> {log}\nsleep 0.3\necho end >> {log}\n")
    exe.chmod(0o755)
    return exe, log


def test_concurrent_first_calls_do_not_overlap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two callers at once (separate opens of the lock file conflict, as two processes'
    would): the runs follow each other; later calls in the process run nothing."""
    monkeypatch.setenv("HWAPPROX_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(runner, "_YOWASP_READY", set())
    exe, log = _fake_tool(tmp_path)
    threads = [threading.Thread(target=runner.yowasp_ready, args=(str(exe),)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = log.read_text().split()
    assert len(lines) in (2, 4)  # the second waited (and may have run once more)
    assert lines == ["start", "end"] * (len(lines) // 2)  # never start, start
    runner.yowasp_ready(str(exe))
    assert log.read_text().split() == lines  # ready: not run again


def test_a_missing_tool_is_left_to_the_real_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HWAPPROX_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(runner, "_YOWASP_READY", set())
    missing = str(tmp_path / "no-such-tool")
    runner.yowasp_ready(missing)  # no error here
    assert missing not in runner._YOWASP_READY
