"""Benchmark the pyfuse3 patch on its own: a tiny forked pyfuse3 file system (evals/tinyfs.py, not
recallfs) against the same tree on tmpfs, warm. Every ratio comes from figures measured in this run.

    python -m recallfs.evals.bench_pyfuse3                      # 2,000 dirs x 5 files, all modes
    PYTHONPATH=/path/to/stock-pyfuse3 python -m recallfs.evals.bench_pyfuse3 --modes classic

Modes (see evals/tinyfs.py): classic = what stock pyfuse3 can do (OPEN/OPENDIR/RELEASE on every walk,
keep_cache); cachedir = classic + cache_readdir through a FileInfo from opendir (needs the patch);
noopen = open/opendir decline with ENOSYS, read/readdir by inode (needs the patch).
Warm: one unmeasured run, then the median of --repeat runs. `cat` is one `cat` over a precomputed
list of every file. Also prints the handler calls of one warm walk of all four tools.

`--cold` measures instead what a cold walk costs a file system that does nothing per request (the
floor under any pyfuse3 file system on this machine): the tree written to disk and walked after the
page cache is dropped, against a freshly mounted tinyfs (noopen), alternating for --repeat rounds:

    python -m recallfs.evals.bench_pyfuse3 --cold --dirs 30000 --files 3 --repeat 3

Needs root (mounting, dropping caches), fusermount3 and rg; the warm native tree goes to /dev/shm.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from recallfs.evals.tinyfs import MODES, Mounted, Tree, mounted, patched

TOOLS = ("cat", "grep -r", "rg", "find")


def _command(tool: str, root: Path, files: list[str]) -> list[str]:
    if tool == "cat":
        return ["cat", *files]
    if tool == "grep -r":
        return ["grep", "-r", "-c", "needle", str(root)]
    if tool == "rg":
        return ["rg", "-c", "--no-messages", "needle", str(root)]
    return ["find", str(root)]


def _time_tool(tool: str, root: Path, files: list[str], repeat: int) -> float:
    """Median seconds of `repeat` warm runs (after one unmeasured run that warms the caches)."""
    cmd = _command(tool, root, files)
    subprocess.run(cmd, capture_output=True, check=True, timeout=600)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True, timeout=600)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _file_list(tree: Tree, root: Path) -> list[str]:
    return [str(root / tree.dir_name(d) / tree.file_name(f))
            for d in range(tree.dirs) for f in range(tree.files)]


def _measure(tree: Tree, root: Path, repeat: int) -> dict[str, float]:
    files = _file_list(tree, root)
    return {tool: _time_tool(tool, root, files, repeat) for tool in TOOLS}


def _warm_walk_calls(fs: Mounted, tree: Tree) -> dict[str, int]:
    files = _file_list(tree, fs.path)
    for tool in TOOLS:  # warm-up walk
        subprocess.run(_command(tool, fs.path, files), capture_output=True, check=True, timeout=600)
    fs.reset()
    for tool in TOOLS:
        subprocess.run(_command(tool, fs.path, files), capture_output=True, check=True, timeout=600)
    return {op: n for op, n in fs.counts().items() if n}


def run(tree: Tree, modes: list[str], repeat: int) -> None:
    print(f"pyfuse3 patched: {patched()}; tree {tree.dirs} dirs x {tree.files} files; warm, median of "
          f"{repeat}")
    with tempfile.TemporaryDirectory(dir="/dev/shm") as shm, tempfile.TemporaryDirectory() as tmp:
        native = Path(shm) / "tree"
        tree.write_native(native)
        base = _measure(tree, native, repeat)
        print(f"{'mode':<10}" + "".join(f"{tool:>18}" for tool in TOOLS))
        print(f"{'tmpfs':<10}" + "".join(f"{base[t] * 1000:>15.1f} ms" for t in TOOLS))
        for mode in modes:
            with mounted(tree, mode, Path(tmp) / f"mnt-{mode}") as fs:
                got = _measure(tree, fs.path, repeat)
                calls = _warm_walk_calls(fs, tree)
            cells = "".join(f"{got[t] * 1000:>8.1f} ms {got[t] / base[t]:>5.1f}x" for t in TOOLS)
            print(f"{mode:<10}{cells}")
            print(f"{'':<10}handler calls in one warm walk of all four: {calls or 'none'}")


def _drop_caches() -> None:
    subprocess.run(["sync"], check=True)
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def _cold_seconds(tool: str, root: Path, files: list[str]) -> float:
    _drop_caches()
    start = time.perf_counter()
    subprocess.run(_command(tool, root, files), capture_output=True, check=True, timeout=3600)
    return time.perf_counter() - start


def run_cold(tree: Tree, tools: list[str], repeat: int) -> None:
    """Cold walks: native on disk against a fresh tinyfs (noopen), per round, alternating."""
    print(f"pyfuse3 patched: {patched()}; tree {tree.dirs} dirs x {tree.files} files; cold, {repeat} rounds")
    with tempfile.TemporaryDirectory(dir="/var/tmp") as disk, tempfile.TemporaryDirectory() as tmp:
        native = Path(disk) / "tree"
        tree.write_native(native)
        for round_ in range(1, repeat + 1):
            for tool in tools:
                base = _cold_seconds(tool, native, _file_list(tree, native))
                with mounted(tree, "noopen", Path(tmp) / f"mnt-{round_}-{tool.split()[0]}") as fs:
                    got = _cold_seconds(tool, fs.path, _file_list(tree, fs.path))
                    calls = sum(fs.counts().values())
                print(f"round {round_} {tool:<8} native {base:6.2f} s  tinyfs {got:6.2f} s  {got / base:5.2f}x"
                      f"  {calls} handler calls, {got / max(calls, 1) * 1e6:.0f} us each", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dirs", type=int, default=2000)
    parser.add_argument("--files", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--modes", nargs="+", choices=MODES, default=None,
                        help="default: all when pyfuse3 is patched, else classic")
    parser.add_argument("--cold", action="store_true", help="cold walks, native on disk vs tinyfs (noopen)")
    parser.add_argument("--tools", default="find", help="with --cold: comma-separated, of " + ", ".join(TOOLS))
    args = parser.parse_args(argv)
    if args.cold:
        tools = [t.strip() for t in args.tools.split(",")]
        if not set(tools) <= set(TOOLS):
            parser.error(f"--tools: each of {', '.join(TOOLS)}")
        run_cold(Tree(args.dirs, args.files), tools, args.repeat)
        return
    modes = args.modes or (list(MODES) if patched() else ["classic"])
    run(Tree(args.dirs, args.files), modes, args.repeat)


if __name__ == "__main__":
    main()
