"""Benchmark the pyfuse3 patch on its own: a tiny forked pyfuse3 file system (evals/tinyfs.py, not
recallfs) against the same tree on tmpfs, warm. Every ratio comes from figures measured in this run.

    python -m recallfs.evals.bench_pyfuse3                      # 2,000 dirs x 5 files, all modes
    PYTHONPATH=/path/to/stock-pyfuse3 python -m recallfs.evals.bench_pyfuse3 --modes classic

Modes (see evals/tinyfs.py): classic = what stock pyfuse3 can do (OPEN/OPENDIR/RELEASE on every walk,
keep_cache); cachedir = classic + cache_readdir through a FileInfo from opendir (needs the patch);
noopen = open/opendir decline with ENOSYS, read/readdir by inode (needs the patch).
Warm: one unmeasured run, then the median of --repeat runs. `cat` is one `cat` over a precomputed
list of every file. Also prints the handler calls of one warm walk of all four tools.

Needs root (mounting), fusermount3 and rg; the native tree goes to /dev/shm.
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dirs", type=int, default=2000)
    parser.add_argument("--files", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--modes", nargs="+", choices=MODES, default=None,
                        help="default: all when pyfuse3 is patched, else classic")
    args = parser.parse_args(argv)
    modes = args.modes or (list(MODES) if patched() else ["classic"])
    run(Tree(args.dirs, args.files), modes, args.repeat)


if __name__ == "__main__":
    main()
