# ruff: noqa: E501
"""Generate the bundled demo memory (demo_memory.jsonl) and its hand-written queries (demo_queries.json).

The demo is the memory of a coding agent, "atlas", working with a developer, "maya", on "tern", a small
open-source Rust + Python command-line tool that syncs dotfiles. It is written by hand below and emitted
deterministically: running this script twice gives byte-identical files.

    python query/data/make_demo_memory.py          # writes both files next to this script and validates them

Format: developer-notes/jsonl-schema.md. Supersession in the demo (see SUPERSESSION at the bottom):
same-id versions, `supersedes`/`superseded_by`, shared `slot` keys and a `deleted` version.
"""

from __future__ import annotations

import itertools
import json
import re
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from recallfs.query.ids import is_memory_id
from recallfs.query.importers.jsonl import jsonl_lines

WORKSPACE = "demo/tern"
HERE = Path(__file__).resolve().parent
MEMORY_PATH = HERE / "demo_memory.jsonl"
QUERIES_PATH = HERE / "demo_queries.json"


@dataclass
class T:
    """One turn; speakers alternate maya / atlas starting with maya."""

    text: str
    caption: str | None = None


@dataclass
class F:
    """One fact record. `key` names it for the query list; `refs` are turn seqs of the same session."""

    key: str
    kind: str
    content: str
    refs: list[int]
    entity: str | None = None
    tags: list[str] = field(default_factory=list)
    id: str | None = None
    slot: str | None = None
    status: str | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    agent: str = "atlas"
    visibility: str | None = None


@dataclass
class Session:
    id: str
    start: str  # "YYYY-MM-DDTHH:MM"
    title: str
    summary: str
    turns: list[T | str]
    facts: list[F]


SESSIONS: list[Session] = [
    # ------------------------------------------------------------------ 1
    Session(
        id="2026-03-02-ci-setup",
        start="2026-03-02T09:05",
        title="Setting up GitHub Actions CI for tern",
        summary=(
            "tern had no CI, so atlas added .github/workflows/ci.yml with fmt, clippy, test and python jobs. "
            "The test job runs on pinned runners (ubuntu-24.04, macos-14, windows-2022) against stable Rust and "
            "the MSRV, which `cargo msrv find` put at 1.74. Clippy runs with -D warnings at maya's request. "
            "One Windows test (status_reports_clean) failed on path separators and was ignored on Windows, tracked as #190. "
            "PR #187 was squash-merged and main is green; the whole workflow takes about 9 minutes."
        ),
        turns=[
            "Morning. tern has no CI at all right now: I run `cargo test` on my laptop before tagging and that's it. Can you set up GitHub Actions for github.com/mayalind/tern?",
            "Sure. Plan: one workflow at `.github/workflows/ci.yml`, triggered on push to main and on pull_request, with four jobs: `fmt` (`cargo fmt --all --check`), `clippy` (`cargo clippy --all-targets --all-features -- -D warnings`), `test` on an OS matrix, and `python` for the tern_hooks bindings. Which operating systems do you care about?",
            "Linux and macOS are where the users are, but we got two Windows bug reports last month, so include Windows. Only the free hosted runners though.",
            "Then the matrix is ubuntu-24.04, macos-14 (arm64) and windows-2022. I'll pin the images instead of using `-latest`, so a runner image bump can't silently change the toolchain under us. For Rust I'd test stable plus the minimum supported version. What's the MSRV today? Cargo.toml has no `rust-version` field.",
            "Honestly no idea. Whatever builds.",
            "I ran `cargo msrv find`: the oldest toolchain that builds is 1.74.0, because clap 4.5 requires it. I'll set `rust-version = \"1.74\"` in Cargo.toml and add an `msrv` matrix entry using dtolnay/rust-toolchain@1.74.",
            "Good. Please cache something, a clean build takes 3 minutes on my M2.",
            "I'll use Swatinem/rust-cache@v2, keyed on job and OS. The test step itself stays what you run locally: `cargo test --workspace --all-features`.",
            "Yes, keep cargo test for now. Ping me when the PR is up.",
            "PR #187 \"ci: add GitHub Actions workflow\" is up. First run: fmt and clippy green, ubuntu and macos green, windows-2022 red. `tests/status.rs::status_reports_clean` fails with `assertion `left == right` failed\n  left: \"~/.config/tern/tern.toml\"\n right: \"~\\\\.config\\\\tern\\\\tern.toml\"`.",
            "Ugh, path separators. Can we skip that one on Windows for now and fix it properly later?",
            "I gated it with `#[cfg_attr(windows, ignore = \"path separators in status output, see #190\")]` and opened #190. Clippy also flagged a `needless_borrow` in src/paths.rs, fixed in the same PR.",
            "Fine. One rule for CI from day one: clippy warnings fail the build. I don't want warnings piling up like in my last project.",
            "That's already how the clippy job is set up (`-D warnings`). I'm also adding a `concurrency` group keyed on the branch, so a new push to a PR cancels the run for the previous commit.",
            "Nice. And the Python side?",
            "The `python` job uses actions/setup-python@v5 for 3.8 through 3.12, builds the extension with `maturin develop` in a venv and runs `pytest python/tests -q`. All five versions pass. Wall time for the whole workflow is about 9 minutes; windows-2022 is the slowest at 8m40s.",
            "Merge it, and put the CI badge in the README.",
            "Merged #187 (squash) and added the badge to README.md. main is green.",
        ],
        facts=[
            F("ci-workflow", "fact", "CI runs on GitHub Actions from .github/workflows/ci.yml on every push to main and every pull request. Jobs: fmt (`cargo fmt --all --check`), clippy, test (matrix ubuntu-24.04, macos-14, windows-2022 on stable plus the MSRV toolchain) and python (pytest for the tern_hooks bindings).", [1, 3, 15], entity="ci", tags=["github-actions", "ci"]),
            F("test-command@1", "procedure", "To run the tests: `cargo test --workspace --all-features`. This is also exactly what the CI test job runs.", [7, 8], entity="tests", tags=["tests", "cargo"], id="f-test-command", slot="tests.command"),
            F("msrv@1", "fact", "Minimum supported Rust version (MSRV) is 1.74, because clap 4.5 needs it. Declared as `rust-version = \"1.74\"` in Cargo.toml and checked by an msrv job in CI using dtolnay/rust-toolchain@1.74.", [5], entity="rust", tags=["msrv", "toolchain"], id="f-msrv", slot="rust.msrv"),
            F("clippy-deny", "constraint", "Clippy warnings fail CI: the clippy job runs `cargo clippy --all-targets --all-features -- -D warnings`. maya wants zero warnings on main at all times.", [12, 13], entity="ci", tags=["clippy", "lint"]),
            F("pinned-runners", "decision", "CI runner images are pinned (ubuntu-24.04, macos-14, windows-2022) instead of `*-latest`, so an image bump on GitHub's side can't silently change the environment.", [3], entity="ci", tags=["github-actions", "runners"]),
            F("min-python@1", "fact", "The Python bindings (tern_hooks, built with maturin) support Python 3.8 and newer; the CI python job tests 3.8, 3.9, 3.10, 3.11 and 3.12.", [15], entity="python", tags=["python", "maturin"], id="f-min-python"),
            F("windows-190", "fact", "On windows-2022 the test tests/status.rs::status_reports_clean compared display strings with hard-coded `/` and failed (`~\\.config\\tern\\tern.toml` vs `~/.config/tern/tern.toml`). It was ignored on Windows with cfg_attr and tracked in issue #190.", [9, 10, 11], entity="windows", tags=["windows", "paths", "tests"]),
        ],
    ),
    # ------------------------------------------------------------------ 2
    Session(
        id="2026-03-09-release-process",
        start="2026-03-09T14:10",
        title="Automating the release process and shipping 0.4.0",
        summary=(
            "After 0.3.3 shipped to crates.io but not to PyPI, maya and atlas automated releases. "
            "scripts/release.sh bumps the version, regenerates CHANGELOG.md with git-cliff and tags; pushing the tag runs "
            "release.yml, which builds wheels with maturin-action, publishes to PyPI via trusted publishing and to crates.io "
            "with CARGO_REGISTRY_TOKEN, gated on maya's approval of the `release` environment, and opens a PR on the Homebrew tap. "
            "They agreed on a monthly release on the first Tuesday, and docs keep being deployed by hand with mkdocs gh-deploy. "
            "0.4.0 was released with the new pipeline."
        ),
        turns=[
            "I want to write down how we release, because last time I forgot the wheels: pip users got 0.3.2 while crates.io had 0.3.3.",
            "From the shell history you pasted last week, 0.3.3 was: bump the version in Cargo.toml and pyproject.toml, `cargo publish`, tag, push the tag. The wheels were built by hand with `maturin build --release` on your Mac, so Linux and Windows users never got 0.3.3 from PyPI.",
            "Right. I want tagging to be the only manual step.",
            "Proposal: `scripts/release.sh X.Y.Z` bumps the version, regenerates CHANGELOG.md with git-cliff, commits `chore(release): vX.Y.Z` and creates an annotated tag. Pushing the tag triggers `.github/workflows/release.yml`: PyO3/maturin-action builds wheels for manylinux x86_64/aarch64, macOS universal2 and Windows amd64, pypa/gh-action-pypi-publish uploads them, and `cargo publish` runs with CARGO_REGISTRY_TOKEN.",
            "Does trusted publishing mean no PyPI token in the repo secrets?",
            "Correct. PyPI trusts the GitHub OIDC token issued to the `release` environment of this repo, so the only registry secret is CARGO_REGISTRY_TOKEN. I'll configure the `release` environment to require your approval, so a stray tag can never publish on its own.",
            "Love that. What about the Homebrew tap?",
            "The tap is mayalind/homebrew-tap with Formula/tern.rb. A last job runs mislav/bump-homebrew-formula-action with `create-pullrequest: true`, which opens a PR on the tap with the new tarball URL and sha256. It needs a token with write access to the tap, stored as HOMEBREW_TAP_TOKEN.",
            "ok. How often do we release? I was thinking monthly, first Tuesday of the month, unless there's a security fix.",
            "Monthly on the first Tuesday works. Security fixes get a patch release immediately, outside the schedule. I'll put both rules in RELEASING.md.",
            "Also the changelog. I hate changelogs that are just a dump of commit messages.",
            "git-cliff groups entries by conventional-commit type (feat, fix, perf, docs) and skips chore and ci. That only works if commit subjects follow Conventional Commits, so squash-merge titles need to look like `fix(link): handle missing target dir`.",
            "Fine, we'll stick to that. And docs: after a release I run `mkdocs gh-deploy` from my laptop. Keep that as a step?",
            "Added to RELEASING.md as the last step: from an up-to-date main, run `mkdocs gh-deploy --force`; it builds the site and pushes it to the gh-pages branch, which GitHub Pages serves at docs.tern-sync.dev.",
            "Let's do a dry run with 0.4.0.",
            "`scripts/release.sh 0.4.0 --dry-run` prints the version bumps, the changelog section (3 feat, 5 fix) and the tag command without executing anything. One problem: pyproject.toml had the version hard-coded. I switched it to `dynamic = [\"version\"]` so maturin reads it from Cargo.toml, one source of truth.",
            "Do it for real.",
            "Tagged v0.4.0 and pushed. release.yml built 7 wheel artifacts and the sdist and is now waiting for your approval on the `release` environment.",
            "Approved.",
            "Published: tern 0.4.0 on crates.io, tern-sync 0.4.0 on PyPI, and the tap PR mayalind/homebrew-tap#14 is open. `pip install tern-sync==0.4.0` works in a fresh ubuntu:24.04 container. Merging the tap PR when you say so.",
            "Merge it. Thanks, this is so much better.",
            "Merged. RELEASING.md is committed with the full checklist.",
        ],
        facts=[
            F("release-procedure@1", "procedure", "How to cut a release: (1) `scripts/release.sh X.Y.Z` (bumps Cargo.toml, regenerates CHANGELOG.md with git-cliff, commits `chore(release): vX.Y.Z`, creates an annotated tag); (2) push the tag; (3) release.yml builds wheels with maturin-action, publishes to PyPI (trusted publishing) and crates.io (CARGO_REGISTRY_TOKEN) once maya approves the `release` environment; (4) merge the PR that bump-homebrew-formula-action opens on mayalind/homebrew-tap. Checklist lives in RELEASING.md.", [3, 5, 7, 21], entity="release", tags=["release", "procedure", "pypi", "crates.io", "homebrew"], id="f-release-procedure"),
            F("release-cadence-monthly", "decision", "Release cadence: one release a month, on the first Tuesday. Security fixes get an immediate patch release outside the schedule.", [8, 9], entity="release", tags=["release", "cadence"], id="f-release-cadence-monthly", slot="release.cadence"),
            F("package-names", "fact", "Package names: the crate is `tern` on crates.io, the Python distribution is `tern-sync` on PyPI (wheel files are named tern_sync-*), and the Homebrew formula is mayalind/homebrew-tap/tern.", [19], entity="release", tags=["pypi", "crates.io", "homebrew", "naming"]),
            F("release-secrets", "fact", "Release secrets: only CARGO_REGISTRY_TOKEN (crates.io) and HOMEBREW_TAP_TOKEN (write access to the tap). PyPI uses trusted publishing via GitHub OIDC, so there is no PyPI token anywhere.", [5, 7], entity="release", tags=["secrets", "pypi", "trusted-publishing"]),
            F("release-env-approval", "constraint", "The `release` GitHub environment requires maya's manual approval before anything is published, so a stray tag can't publish on its own.", [5], entity="release", tags=["release", "security", "github-actions"]),
            F("version-source", "fact", "The version number lives only in Cargo.toml; pyproject.toml declares `dynamic = [\"version\"]` and maturin reads it from Cargo.toml.", [15], entity="release", tags=["versioning", "maturin"]),
            F("conventional-commits", "constraint", "Commit subjects on main must follow Conventional Commits (e.g. `fix(link): handle missing target dir`), because git-cliff builds CHANGELOG.md from them; chore and ci commits are left out of the changelog.", [10, 11, 12], entity="release", tags=["changelog", "git-cliff", "commits"]),
            F("docs-deploy-ghpages", "procedure", "Docs deployment: after a release, maya runs `mkdocs gh-deploy --force` from an up-to-date main. It pushes the built site to the gh-pages branch and GitHub Pages serves it at docs.tern-sync.dev.", [12, 13], entity="docs", tags=["docs", "mkdocs", "github-pages"], id="f-docs-deploy-ghpages", slot="docs.deploy"),
        ],
    ),
    # ------------------------------------------------------------------ 3
    Session(
        id="2026-03-17-windows-paths",
        start="2026-03-17T10:30",
        title="Fixing `tern link` on Windows (os error 123), patch release 0.4.1",
        summary=(
            "A Windows user reported in #212 that `tern link` failed with os error 123. "
            "The cause was a `\\\\?\\` verbatim prefix from std::fs::canonicalize combined with paths built with format! that mixed `/` and `\\`. "
            "atlas switched to dunce::canonicalize, Path::join and dirs::home_dir, and banned std::fs::canonicalize via clippy.toml. "
            "maya decided that a failed symlink (os error 1314) must produce a clear error, not a silent copy fallback. "
            "#190 was fixed on the way and 0.4.1 was released out of schedule."
        ),
        turns=[
            T("Issue #212 from a Windows user: `tern link` fails outright. Here's their screenshot.", caption="PowerShell window. `PS C:\\Users\\jkowal> tern link` followed by red text: `Error: failed to link C:\\Users\\jkowal\\.config/tern\\nvim -> \\\\?\\C:\\Users\\jkowal\\dotfiles\\nvim` and `Caused by: The filename, directory name, or volume label syntax is incorrect. (os error 123)`."),
            "Two things are visible. The destination mixes separators (`.config/tern\\nvim`) because src/paths.rs builds the config dir with `format!(\"{home}/.config/tern\")` instead of `Path::join`. And the source carries a `\\\\?\\` verbatim prefix, which is what `std::fs::canonicalize` returns on Windows. Verbatim paths skip normalization, so a `/` that ends up inside one is taken literally and Windows rejects it with os error 123.",
            "I've seen the `\\\\?\\` thing before. Is there a crate for it?",
            "`dunce`: `dunce::canonicalize` returns the ordinary `C:\\...` form whenever it's representable and only falls back to verbatim when it has to. I'd replace all 4 calls to `fs::canonicalize` in src/ (paths.rs, link.rs, status.rs) and build paths with `home.join(\".config\").join(\"tern\")`.",
            "Do it. Related: what happens when symlink creation itself fails on Windows?",
            "Creating symlinks on Windows needs admin rights or Developer Mode; otherwise CreateSymbolicLinkW fails with `A required privilege is not held by the client. (os error 1314)`. Option: catch 1314 and fall back to copying the file, with a one-time warning.",
            "Copy fallback silently changes semantics: edits on the machine won't flow back into the repo. I'd rather it be explicit.",
            "Then no automatic fallback. On 1314 we fail with: \"creating symlinks on Windows requires Developer Mode or an elevated shell; enable it or re-run with `--mode copy`\". And `link.mode = \"copy\"` can be set in tern.toml so Windows users don't have to pass the flag every time.",
            "Yes. Explicit over magic, always.",
            "One more: we read the home directory from `std::env::var(\"HOME\")`, which is unset on most Windows machines. It only worked for the reporter because Git Bash sets HOME. Switching to `dirs::home_dir()`.",
            "Good catch. Can we get tests for all of this on the Windows runner?",
            "Added tests/windows_paths.rs (`#![cfg(windows)]`): no `\\\\?\\` prefix in displayed paths, the config dir built with backslashes, and the 1314 error text via a mocked symlink call. While there I fixed #190: status_reports_clean now compares `Path`s instead of strings, so the Windows ignore is gone.",
            "So Windows is fully tested in CI now?",
            "All tests run on windows-2022 with zero ignored. Caveat: the hosted runner account is an administrator, so real symlink creation succeeds there; the unprivileged case is only covered by the mocked test.",
            "Good enough. Can this go out as a patch?",
            "It's a bugfix with no config change, so 0.4.1. But by the cadence the next release is April 7. Do you want an out-of-schedule patch?",
            "Yes. Windows users are completely broken, that's urgent enough. Cut 0.4.1.",
            "Released 0.4.1 with scripts/release.sh; crates.io, PyPI and the tap are updated. I commented on #212 asking the reporter to try `cargo install tern --version 0.4.1`.",
            "Thanks. Note for the future: never build paths with format!, always Path::join.",
            "Noted. I also added `std::fs::canonicalize` to `disallowed-methods` in clippy.toml with the reason \"use dunce::canonicalize (no \\\\?\\ prefix on Windows)\", so CI enforces it.",
        ],
        facts=[
            F("windows-212", "fact", "Bug #212: on Windows `tern link` failed with \"The filename, directory name, or volume label syntax is incorrect. (os error 123)\". Cause: the `\\\\?\\` verbatim prefix from std::fs::canonicalize plus config paths built with format! that mixed `/` and `\\`. Fixed in 0.4.1 with dunce::canonicalize and Path::join.", [0, 1, 3, 17], entity="windows", tags=["windows", "bug", "paths", "os-error-123"]),
            F("no-format-paths", "constraint", "Never build filesystem paths with format! or string concatenation; always use Path::join / PathBuf::push.", [18], entity="code-style", tags=["paths", "rust", "code-style"]),
            F("no-canonicalize", "constraint", "std::fs::canonicalize is banned through `disallowed-methods` in clippy.toml; use dunce::canonicalize, which avoids the `\\\\?\\` verbatim prefix on Windows.", [19], entity="code-style", tags=["clippy", "windows", "paths"]),
            F("symlink-no-fallback", "decision", "When symlink creation fails on Windows with os error 1314 (no Developer Mode, not elevated), tern does NOT fall back to copying. It fails with a message pointing to Developer Mode or `--mode copy`; users can set `link.mode = \"copy\"` in their config.", [5, 6, 7, 8], entity="link", tags=["windows", "symlinks", "os-error-1314"]),
            F("release-041", "fact", "0.4.1 was released out of schedule on 2026-03-17 to fix the Windows link failure (#212); it also fixed #190.", [15, 16, 17], entity="release", tags=["release", "0.4.1", "windows"]),
            F("maya-explicit", "preference", "maya prefers explicit behaviour over magic: a clear error with a hint is better than an automatic fallback that silently changes semantics.", [6, 8], entity="maya", tags=["maya", "design", "errors"]),
        ],
    ),
    # ------------------------------------------------------------------ 4
    Session(
        id="2026-03-24-flaky-watcher-test",
        start="2026-03-24T16:00",
        title="The flaky debounce test on macOS",
        summary=(
            "watch::tests::debounce_coalesces_rapid_writes kept failing on macos-14 (left: 2, right: 1). "
            "atlas traced it to FSEvents delivery latency against a real-time 200 ms debounce window and measured 7 failures in 200 runs. "
            "maya had it quarantined with #[ignore], tracked in #231, with a deadline: fixed or deleted by 0.7.0. "
            "Three other tests that sleep on wall-clock time were listed in #231, and cargo-nextest went on the list for evaluation after the April release."
        ),
        turns=[
            "The macOS job failed on my PR again and I didn't even touch the watcher. Third time this week.",
            "Same test every time: `watch::tests::debounce_coalesces_rapid_writes` in src/watch.rs. The failure is `assertion `left == right` failed: expected one batched event after 5 rapid writes\n  left: 2\n right: 1`. It only ever fails on macos-14.",
            "What does the test actually do?",
            "It writes a temp file 5 times in a tight loop, sleeps 300 ms, and asserts the debouncer emitted exactly one event. The debounce window is 200 ms. On macOS the `notify` crate uses FSEvents, which delivers events with latency that is sometimes over 100 ms, so the 5 writes can straddle two windows.",
            "So the test is wrong, not the code?",
            "Mostly the test: it depends on real wall-clock timing. The watcher behaves fine for a human saving a file. The edge case is a user saving twice within ~250 ms getting two syncs, which is harmless because sync is idempotent.",
            "How flaky is it, in numbers?",
            "I looped it 200 times on a macos-14 runner through a workflow_dispatch job: 7 failures, about 3.5%. On ubuntu-24.04: 0 out of 200.",
            "I don't have time for a proper fix this week. Quarantine it.",
            "Marked it `#[ignore = \"flaky: macOS FSEvents latency, see #231\"]` and opened #231 with the failure log and the 7/200 numbers. It still runs on demand with `cargo test -- --ignored debounce`.",
            "I don't love ignored tests. They rot. Put a deadline on it.",
            "Added to #231: \"must be fixed or deleted by the 0.7.0 release\", and put it on the 0.7.0 milestone so it shows up in the release checklist.",
            "Is there something better than cargo test for this kind of thing? I've heard nextest does retries.",
            "cargo-nextest runs every test in its own process, supports retries (`--retries 2`) and reports tests that pass on retry as FLAKY, and has per-test timeouts. The catch: it doesn't run doctests, so we'd keep `cargo test --doc` as a separate step. I'd evaluate it after the April release rather than right before it.",
            "After the April release then. Put it on the board.",
            "Added \"evaluate cargo-nextest (retries, JUnit output)\" to the project board under Next.",
            "And check if any other test sleeps on real time.",
            "Grepping tests for `thread::sleep` and `tokio::time::sleep` finds 3 more: tests/sync.rs::sync_after_remote_change (1 s sleep waiting for a git fetch), src/lock.rs::lock_times_out and src/watch.rs::watch_stops_on_ctrl_c. None failed in the last 60 CI runs, but it's the same pattern, so I listed them in #231.",
        ],
        facts=[
            F("flaky-debounce", "fact", "watch::tests::debounce_coalesces_rapid_writes is flaky on macos-14 (7 of 200 runs, ~3.5%, `left: 2 right: 1`) because FSEvents latency races the 200 ms debounce window. Quarantined with #[ignore], tracked in #231; must be fixed or deleted by 0.7.0.", [1, 3, 7, 9, 11], entity="tests", tags=["flaky", "macos", "watcher", "quarantine"], id="f-flaky-debounce"),
            F("debounce-window", "fact", "The file watcher (src/watch.rs, notify crate; FSEvents backend on macOS) coalesces changes within a 200 ms debounce window before syncing. Sync is idempotent, so a double sync is harmless.", [3, 5], entity="watch", tags=["watcher", "debounce", "notify"]),
            F("maya-ignored-tests", "preference", "maya dislikes #[ignore]d tests because they rot; every quarantined test needs a tracking issue and a deadline (a release by which it is fixed or deleted).", [10, 11], entity="maya", tags=["maya", "tests", "flaky"]),
            F("sleepy-tests", "observation", "Tests that wait on wall-clock sleeps, all listed in #231 as flakiness risks: tests/sync.rs::sync_after_remote_change (1 s sleep for a git fetch), src/lock.rs::lock_times_out, src/watch.rs::watch_stops_on_ctrl_c.", [16, 17], entity="tests", tags=["flaky", "timing", "tests"]),
            F("nextest-eval", "decision", "Evaluate cargo-nextest (per-test processes, retries, FLAKY reporting, JUnit output) after the April 2026 release; note it does not run doctests.", [12, 13, 14, 15], entity="tests", tags=["nextest", "tests"], id="f-nextest-eval"),
        ],
    ),
    # ------------------------------------------------------------------ 5
    Session(
        id="2026-04-01-telemetry-optin",
        start="2026-04-01T11:20",
        title="Designing opt-in usage telemetry",
        summary=(
            "maya wanted to know which subcommands and platforms people use, so atlas designed opt-in telemetry. "
            "It is off by default, enabled with `tern telemetry enable` or TERN_TELEMETRY=1, always disabled by DO_NOT_TRACK=1, and never sends paths or arguments. "
            "Events go to a Cloudflare Worker that inserts into a Neon Postgres `events` table with 90-day retention; the CLI never holds database credentials. "
            "Sending happens on a background thread with a 500 ms timeout so it can't slow commands down. PR #244 was merged for 0.5.0."
        ),
        turns=[
            "I want some idea of how people use tern: which subcommands, which OS, which version. Right now I'm guessing from GitHub issues.",
            "We could add opt-in usage telemetry. Minimal event: `{ts, tern_version, os, arch, subcommand, exit_code, anon_id}`. The anon id is a random UUIDv4 generated when someone opts in and stored in ~/.local/state/tern/telemetry_id, never derived from hostname or username.",
            "Opt-in only. Off unless someone explicitly turns it on. And no file paths, ever: dotfile paths leak usernames.",
            "Agreed: off by default; enabled by `tern telemetry enable` (writes `telemetry = true` to the config) or TERN_TELEMETRY=1; DO_NOT_TRACK=1 disables it regardless. Subcommand names only, no arguments, no paths. Where should the data go?",
            "I have a Neon Postgres account on the free tier. Can the CLI just insert into a table?",
            "Not directly: a Postgres connection string embedded in a binary can be extracted by anyone, who could then read or write the database. I'd put a tiny ingest endpoint in front, a Cloudflare Worker at https://t.tern-sync.dev/v1/events that validates the payload shape and inserts into Neon through @neondatabase/serverless. The CLI only knows the URL.",
            "Makes sense. Schema?",
            "`CREATE TABLE events (id bigserial PRIMARY KEY, received_at timestamptz NOT NULL DEFAULT now(), anon_id uuid NOT NULL, tern_version text NOT NULL, os text NOT NULL, arch text NOT NULL, subcommand text NOT NULL, exit_code smallint NOT NULL);` plus an index on received_at. Retention through pg_cron: `DELETE FROM events WHERE received_at < now() - interval '90 days'` nightly.",
            "90 days is fine. And the CLI must never block on this.",
            "The event is sent from a background thread with a 500 ms timeout after the command finishes; errors are swallowed. If the process exits first, the event is dropped. No retries, no on-disk queue.",
            "Good. Document all of it.",
            "Wrote docs/telemetry.md: what is collected, how to enable and disable, DO_NOT_TRACK, retention, and the exact JSON of one event. `tern telemetry status` prints whether it's on and the anon id.",
            "Where does the Worker code live?",
            "In infra/telemetry-worker/ (TypeScript, wrangler.toml). The Neon DATABASE_URL is a Worker secret set with `wrangler secret put DATABASE_URL`; it's not in the repo.",
            "Just so you know, the Neon login is my personal account. I'm not sharing it with anyone.",
            "Understood. Any Neon console steps stay with you; I'll only touch the Worker through wrangler with the API token you scoped for it.",
            "Ship it in 0.5.0 next week.",
            "Merged #244 \"feat(telemetry): opt-in usage telemetry\". It goes out with 0.5.0 on April 7.",
        ],
        facts=[
            F("telemetry@1", "decision", "tern has opt-in usage telemetry (from 0.5.0): off by default, enabled by `tern telemetry enable` or TERN_TELEMETRY=1, always disabled by DO_NOT_TRACK=1. An event holds an anonymous UUID, tern version, OS, arch, subcommand name and exit code; never paths or arguments. Documented in docs/telemetry.md.", [1, 2, 3, 11], entity="telemetry", tags=["telemetry", "privacy", "opt-in"], id="f-telemetry"),
            F("telemetry-db@1", "fact", "Telemetry pipeline: the CLI posts to a Cloudflare Worker at https://t.tern-sync.dev/v1/events (code in infra/telemetry-worker/), which inserts into the Neon Postgres table `events`; DATABASE_URL is a Worker secret; rows older than 90 days are deleted nightly by pg_cron.", [5, 7, 13], entity="telemetry", tags=["telemetry", "postgres", "neon", "cloudflare-workers"], id="f-telemetry-db"),
            F("telemetry-nonblocking", "constraint", "Telemetry must never slow down or block a command: events go from a background thread with a 500 ms timeout, errors are swallowed, no retries, no on-disk queue.", [8, 9], entity="telemetry", tags=["telemetry", "performance"]),
            F("no-db-creds-in-binary", "constraint", "Never embed database credentials or connection strings in the tern binary; anything shipped to users can be extracted. Put a small validated endpoint in front instead.", [5], entity="security", tags=["security", "secrets"]),
            F("neon-personal", "fact", "The Neon account behind telemetry is maya's personal account and she won't share the login; any Neon console steps are hers to do. atlas only touches the Worker via wrangler with the scoped API token.", [14, 15], entity="maya", tags=["maya", "neon", "access"], visibility="private"),
        ],
    ),
    # ------------------------------------------------------------------ 6
    Session(
        id="2026-04-09-nextest-migration",
        start="2026-04-09T10:15",
        title="Moving the test suite to cargo-nextest",
        summary=(
            "With 0.5.0 out, atlas switched CI and the documented workflow from `cargo test` to `cargo nextest run`, keeping `cargo test --doc` for the 14 doctests nextest skips. "
            "The test step got faster on every OS (2m41s to 1m52s on Ubuntu). "
            "Process-per-test exposed two latent bugs: shared static state in tests/lock.rs and a shared /tmp/tern-test directory. "
            "maya refused retries for the known-racy debounce test, which stays ignored; only a slow-timeout was configured. PR #251 was merged."
        ),
        turns=[
            "0.5.0 is out, so let's do the nextest thing. #231 is still ignored.",
            "Plan: install cargo-nextest in CI with taiki-e/install-action@v2 (`tool: nextest`), replace `cargo test --workspace --all-features` with `cargo nextest run --workspace --all-features`, and add a separate `cargo test --doc --workspace` step because nextest doesn't run doctests.",
            "Do we have many doctests?",
            "14, mostly in src/config.rs and src/paths.rs. They'd silently stop running if we forgot the extra step; that's the main risk of this migration.",
            "OK. And locally? My fingers type cargo test.",
            "Locally it's `cargo nextest run` (install once with `cargo install cargo-nextest --locked` or `brew install cargo-nextest`). `cargo test` still works, nothing breaks, but nextest is what CI uses, so it's the one to trust. I'll update CONTRIBUTING.md.",
            "Is it actually faster?",
            "Test step on ubuntu-24.04: 2m41s with cargo test, 1m52s with nextest. On windows-2022: 5m10s to 3m20s. Most of the gain is the integration tests in tests/ running in parallel instead of one binary after another.",
            "Nice. Did anything break?",
            "Two things, both latent bugs. tests/lock.rs::lock_is_reentrant relied on a static set by another test in the same binary; with one process per test it failed with `called `Result::unwrap()` on an `Err` value: LockHeld { pid: 0 }`. Now each test sets up its own state. And two tests used the same fixed directory /tmp/tern-test and raced when run in parallel; both use `tempfile::tempdir()` now.",
            "Good, those were real bugs hiding.",
            "For the flaky one I could un-ignore debounce_coalesces_rapid_writes and give it retries through an override in .config/nextest.toml: `[[profile.default.overrides]] filter = 'test(debounce_coalesces_rapid_writes)' retries = 2`.",
            "No. Retries hide it. It stays ignored until we fix it properly. Retries are fine for genuinely environmental stuff, not for a test we know is racy.",
            "Understood, it stays ignored. The nextest config is minimal then: only `slow-timeout = { period = \"60s\", terminate-after = 2 }` on the default profile, so a hung test is killed after 2 minutes instead of hitting the 6 h job timeout.",
            "Yes. Merge.",
            "Merged #251 \"ci: switch to cargo-nextest\". CONTRIBUTING.md now says: run `cargo nextest run` and `cargo test --doc`.",
            "Also, next time put the commands you ran in the PR description, I had to ask you in the comments.",
            "Will do: every PR body will list the commands I ran and on which platforms.",
            "What's the one-liner for running just the config tests?",
            "`cargo nextest run -E 'test(/^config::/)'` uses a filterset with a regex; `cargo nextest run config::` is a simple substring match that does the same here.",
        ],
        facts=[
            F("test-command@2", "procedure", "Run the tests with `cargo nextest run --workspace --all-features` (CI and locally; install with `cargo install cargo-nextest --locked`), plus `cargo test --doc --workspace` for doctests.", [1, 5, 15], entity="tests", tags=["tests", "nextest", "cargo"], id="f-test-command", slot="tests.command"),
            F("doctests-separate", "constraint", "cargo-nextest does not run doctests, so CI keeps a separate `cargo test --doc --workspace` step for the 14 doctests (mostly src/config.rs and src/paths.rs). Dropping that step would silently stop them running.", [1, 3], entity="tests", tags=["doctests", "nextest", "ci"]),
            F("maya-no-retries-racy", "preference", "maya: no retries for a test known to be racy, because retries hide the bug. Retries are acceptable only for environmental flakiness (network, runner hiccups).", [12], entity="maya", tags=["maya", "flaky", "retries"]),
            F("nextest-speed", "observation", "Switching CI to nextest cut the test step from 2m41s to 1m52s on ubuntu-24.04 and from 5m10s to 3m20s on windows-2022, mostly from running the tests/ integration binaries in parallel.", [7], entity="ci", tags=["nextest", "performance", "ci"]),
            F("nextest-filter", "procedure", "Run a subset with nextest: `cargo nextest run -E 'test(/^config::/)'` (filterset with a regex) or `cargo nextest run config::` (substring).", [18, 19], entity="tests", tags=["nextest", "filtering"]),
            F("latent-test-bugs", "fact", "Process-per-test under nextest exposed two latent bugs: tests/lock.rs::lock_is_reentrant depended on static state from another test (`LockHeld { pid: 0 }`), and two tests shared /tmp/tern-test. Tests now use tempfile::tempdir() and set up their own state.", [9], entity="tests", tags=["tests", "nextest", "isolation"]),
            F("pr-commands-dup1", "preference", "maya wants every PR description to say which commands were run to test it and on which platforms.", [16, 17], entity="maya", tags=["maya", "pull-requests", "review"]),
            # The March plan ("evaluate cargo-nextest after the April release") was carried out here: its
            # last version says so and points at the procedure that replaced it.
            F("nextest-eval@2", "decision", "Done: cargo-nextest was evaluated and adopted when CI switched from `cargo test` to `cargo nextest run` in #251 (2026-04-09); the current way to run the tests is the test command.", [15], entity="tests", tags=["nextest", "tests"], id="f-nextest-eval", status="superseded", superseded_by="f-test-command"),
        ],
    ),
    # ------------------------------------------------------------------ 7
    Session(
        id="2026-04-15-config-v2-design",
        start="2026-04-15T13:30",
        title="Designing config format v2",
        summary=(
            "maya and atlas designed config format v2 to replace the v1 `[[files]] src/dst` layout in ~/.config/tern/tern.toml. "
            "v2 has an explicit `version = 2`, `[[link]]` entries with `in_repo` and `on_host` (chosen after src/dst and from/to proved ambiguous, see #198), an optional `os` filter and profiles. "
            "Unknown keys become errors. v1 keeps being read with a warning through 0.7.x and `tern config migrate` converts files. "
            "The design is in docs/design/config-v2.md, tracked in #262."
        ),
        turns=[
            "The config format is holding us back. Let's design v2 before we add profiles.",
            "Current v1, at ~/.config/tern/tern.toml: a top-level `repo = \"~/dotfiles\"` and entries like `[[files]] src = \"nvim\" dst = \"~/.config/nvim\"`. Problems: no per-OS entries (the Windows reporter in #212 keeps a separate repo), no profiles for work/home machines, and src/dst confuses people about direction; in #198 someone swapped them and tern overwrote his nvim config.",
            "#198 still haunts me. What would v2 look like?",
            "Draft: `version = 2`, `repo = \"~/dotfiles\"`, then `[[link]] from = \"nvim\" to = \"~/.config/nvim\" os = [\"linux\", \"macos\"]`, and `[profile.work] extends = \"default\" links = [\"git-work\", \"ssh-work\"]`, selected with `tern --profile work` or TERN_PROFILE.",
            "from/to is still ambiguous to me. From the repo to the machine, sure, but someone will read it as copy from my machine into the repo.",
            "Alternatives: `source`/`target` (but `ln -s TARGET LINK_NAME` already uses those words backwards from most people's intuition), or `in_repo`/`on_host`. Clunky but impossible to misread.",
            "I like impossible to misread. in_repo / on_host. Go.",
            "Updated the draft. I'd also make unknown keys an error in v2: v1 silently ignored them, which is how the typo `dts = ...` in #198 went unnoticed.",
            "Yes, deny unknown fields.",
            "Backwards compatibility: tern detects v1 (no `version` key and a `[[files]]` array), prints a warning and keeps working. `tern config migrate` rewrites the file to v2 and keeps the original as tern.toml.v1.bak.",
            "How long do we keep reading v1?",
            "Read v1 with a warning through 0.7.x and drop it in 0.8.0. At the monthly cadence that's about three months.",
            "OK. Write the design doc.",
            "Wrote docs/design/config-v2.md with the schema, the migration mapping and the timeline, and opened tracking issue #262.",
            "Should `os` accept windows too?",
            "Yes: \"linux\", \"macos\", \"windows\", matching `std::env::consts::OS`. Leaving `os` out means every OS.",
        ],
        facts=[
            F("config-format@v1", "fact", "Config format v1 lives at ~/.config/tern/tern.toml: a top-level `repo` and `[[files]]` entries with `src` (path in the dotfiles repo) and `dst` (path on the machine). Unknown keys are silently ignored.", [1], entity="config", tags=["config", "toml", "v1"], id="f-config-format-v1", slot="config.format"),
            F("config-v2-design", "decision", "Config v2 design (docs/design/config-v2.md, #262): `version = 2`; `[[link]]` entries with `in_repo` and `on_host` (chosen over src/dst and from/to, which people misread); optional `os` list of \"linux\"/\"macos\"/\"windows\"; `[profile.<name>]` with `extends`, selected by `--profile` or TERN_PROFILE; unknown keys are errors.", [3, 5, 6, 7, 8, 13, 15], entity="config", tags=["config", "design", "v2", "profiles"]),
            F("config-v1-sunset@1", "decision", "Config v1 keeps being read, with a warning, through 0.7.x; support is removed in 0.8.0 (about three months at the monthly cadence). `tern config migrate` converts v1 files and keeps tern.toml.v1.bak.", [9, 10, 11], entity="config", tags=["config", "deprecation", "v1"], id="f-config-v1-sunset"),
            F("issue-198", "fact", "Issue #198: a user swapped `src` and `dst` in a v1 config (and a typo `dts` was silently ignored), and tern overwrote his nvim config. This is why v2 uses in_repo/on_host and rejects unknown keys.", [1, 2, 7], entity="config", tags=["config", "incident", "naming"]),
        ],
    ),
    # ------------------------------------------------------------------ 8
    Session(
        id="2026-04-23-config-v2-migration",
        start="2026-04-23T09:40",
        title="Implementing config v2 and `tern config migrate`",
        summary=(
            "atlas implemented config format v2 and the `tern config migrate` command (PR #268, for 0.6.0). "
            "A serde untagged enum gave the useless error \"data did not match any variant of untagged enum RawConfig\", so the parser now peeks at `version` first and reports unknown fields with line and column. "
            "Migration preserves comments via toml_edit, writes tern.toml.v1.bak, supports --dry-run and is idempotent; 11 real-world configs are covered by insta snapshots. "
            "v1 users see a warning that TERN_NO_V1_WARNING=1 silences."
        ),
        turns=[
            "How's config v2 going?",
            "The parser works: src/config/mod.rs has `RawConfig` as a `#[serde(untagged)] enum { V2(ConfigV2), V1(ConfigV1) }` and ConfigV2 is `#[serde(deny_unknown_fields)]`. One catch: untagged plus deny_unknown_fields gives terrible errors. A typo in a v2 file produced only `data did not match any variant of untagged enum RawConfig`.",
            "That's not acceptable as an error message.",
            "Fixed by parsing into a `toml::Table` first, reading the `version` key, then deserializing straight into the right struct. A typo now gives `error: TOML parse error at line 7, column 1: unknown field `on_hots`, expected one of `in_repo`, `on_host`, `os``.",
            "Much better. The migration command?",
            "`tern config migrate` reads v1, maps each `[[files]]` src to in_repo and dst to on_host, writes v2 with toml_edit so comments and ordering survive, and saves the original as tern.toml.v1.bak. `--dry-run` prints a unified diff instead of writing.",
            "Show me.",
            T("Here's the dry run against your own config from ~/dotfiles, comments preserved.", caption="Terminal screenshot of `tern config migrate --dry-run`: a unified diff of ~/.config/tern/tern.toml with red lines `[[files]]`, `src = \"nvim\"`, `dst = \"~/.config/nvim\"` and green lines `version = 2`, `[[link]]`, `in_repo = \"nvim\"`, `on_host = \"~/.config/nvim\"`; the comment `# editor` is kept above the entry; footer `1 file would be rewritten, backup: tern.toml.v1.bak`."),
            "Looks right. Tests?",
            "Snapshot tests with insta in tests/config_migrate.rs: 11 real-world v1 configs, anonymized from issues, each with its expected v2 output in tests/snapshots/; review changes with `cargo insta review`. Plus a round-trip property test: the migrated file parses as v2 and resolves to the same set of links.",
            "What if someone runs migrate twice?",
            "The second run sees `version = 2`, prints \"already at config format v2, nothing to do\" and exits 0. No second backup, so tern.toml.v1.bak is never overwritten with a v2 file.",
            "Good. And what do v1 users see?",
            "On every command: `warning: ~/.config/tern/tern.toml uses config format v1, which will stop being read in tern 0.8.0; run `tern config migrate``. Scripts can silence it with TERN_NO_V1_WARNING=1.",
            "Fine. Docs?",
            "docs/config.md is rewritten for v2; the v1 reference moved to docs/config-v1.md with a deprecation banner, and the README examples are updated.",
            "Merge it, it goes into 0.6.0.",
            "Merged #268 \"feat(config): config format v2 + `tern config migrate`\" and closed #262.",
            "And remember, #231 has to be resolved by 0.7.0.",
            "Yes, it's on the 0.7.0 milestone. I have an idea using a paused tokio clock; I'll try it before then.",
        ],
        facts=[
            F("config-format@v2", "fact", "Config format v2 (since 0.6.0): ~/.config/tern/tern.toml starts with `version = 2`; entries are `[[link]]` tables with `in_repo`, `on_host` and an optional `os` list; profiles live under `[profile.<name>]`. Unknown fields are rejected with a line and column.", [1, 3, 5, 17], entity="config", tags=["config", "toml", "v2"], id="f-config-format-v2", slot="config.format", supersedes="f-config-format-v1"),
            F("config-format@v1-superseded", "fact", "Config format v1 lives at ~/.config/tern/tern.toml: a top-level `repo` and `[[files]]` entries with `src` (path in the dotfiles repo) and `dst` (path on the machine). Unknown keys are silently ignored.", [17], entity="config", tags=["config", "toml", "v1"], id="f-config-format-v1", slot="config.format", status="superseded", superseded_by="f-config-format-v2"),
            F("config-migrate", "procedure", "Upgrade an old v1 config with `tern config migrate`: it rewrites tern.toml to v2 (comments kept via toml_edit) and saves the original as tern.toml.v1.bak. `--dry-run` shows a unified diff without writing; running it again on a v2 file is a no-op.", [5, 7, 11], entity="config", tags=["config", "migration", "cli"]),
            F("config-typo-errors", "fact", "Config typos give a precise error, e.g. `TOML parse error at line 7, column 1: unknown field `on_hots`, expected one of `in_repo`, `on_host`, `os``. The parser reads `version` from a toml::Table first, because the serde untagged enum only said \"data did not match any variant of untagged enum RawConfig\".", [1, 2, 3], entity="config", tags=["config", "errors", "serde"]),
            F("config-snapshots", "procedure", "Config migration tests: tests/config_migrate.rs runs 11 anonymized real-world v1 configs through the migration and compares against insta snapshots in tests/snapshots/; accept intended changes with `cargo insta review`.", [9], entity="tests", tags=["tests", "insta", "snapshots", "config"]),
        ],
    ),
    # ------------------------------------------------------------------ 9
    Session(
        id="2026-05-05-drop-python-38",
        start="2026-05-05T10:00",
        title="Dropping Python 3.8, MSRV 1.80 and release 0.6.0",
        summary=(
            "The Python 3.8 CI job broke after dependabot bumped pytest to 8.4.1, which needs Python 3.9. "
            "With 3.8 at 1.9% of PyPI downloads and past end of life, maya dropped it: requires-python >=3.9, CI tests 3.9 to 3.13, and one abi3-py39 wheel per platform. "
            "The MSRV went from 1.74 to 1.80 so std::sync::LazyLock can replace once_cell. "
            "0.6.0 shipped the same day with config format v2."
        ),
        turns=[
            "Before we cut 0.6.0 today: the Python 3.8 job failed overnight. What happened?",
            "Dependabot's #279 bumped pytest to 8.4.1 in python/requirements-dev.txt, and pytest 8.4 requires Python 3.9 or newer. The 3.8 job dies at install: `ERROR: Could not find a version that satisfies the requirement pytest==8.4.1 (from versions: ..., 8.3.4, 8.3.5)`. scout flagged it after the third red night in a row.",
            "Python 3.8 has been end-of-life since October 2024. Is anybody still on it?",
            "pypistats for tern-sync over the last 30 days: 3.8 is 1.9% of downloads, 3.9 is 6%, 3.12 is 41%. And some of that 3.8 share is CI mirrors.",
            "Drop 3.8. I'm not pinning pytest for 2%.",
            "Changes: `requires-python = \">=3.9\"` and classifiers in pyproject.toml, the CI python matrix becomes 3.9 to 3.13 (adding 3.13 while we're at it), and maturin builds abi3 wheels with the `abi3-py39` feature, so one wheel per platform covers every version from 3.9 up. Changelog entry under Breaking.",
            "Is that a semver-breaking change? We're 0.x.",
            "In 0.x a minor bump may break, and 0.6.0 is a minor, so it fits. pip on 3.8 will simply resolve to 0.5.x because of requires-python, so 3.8 users aren't broken, just frozen.",
            "Great. While we're bumping things, can we raise the MSRV? Dependabot keeps opening PRs we can't merge.",
            "Recent clap and toml_edit releases have moved their rust-version past 1.74. Debian trixie ships rustc 1.85. I'd go to 1.80: that also gives us std::sync::LazyLock, so once_cell can go.",
            "1.80 then. Does anyone build from source with an old rustc?",
            "Two issues in the last year mention Debian bookworm's rustc 1.63, which was already below our old MSRV; nobody complained. Bumping `rust-version` to 1.80 and the msrv CI job with it.",
            "OK. The flaky test, status?",
            "Still ignored (#231), deadline 0.7.0. I'll do the paused-clock fix next week.",
            "Fine. Cut 0.6.0.",
            "0.6.0 is released: config format v2 and `tern config migrate`, Python 3.9+ with abi3 wheels, MSRV 1.80, once_cell replaced by LazyLock. crates.io, PyPI and the tap are updated, and I pinned a GitHub discussion with the v1 to v2 migration steps.",
            "Did the abi3 wheels actually work on 3.13?",
            "Verified: `pip install tern-sync==0.6.0` in python:3.13-slim pulls tern_sync-0.6.0-cp39-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl and `tern --version` prints 0.6.0. Same result in python:3.9-slim.",
            "👍",
        ],
        facts=[
            F("min-python-39", "decision", "Python 3.8 was dropped in 0.6.0: `requires-python = \">=3.9\"`, the CI python job covers 3.9 to 3.13, and wheels are abi3-py39 (one per platform). pip on 3.8 resolves to tern-sync 0.5.x.", [4, 5, 7], entity="python", tags=["python", "compatibility", "abi3"], id="f-min-python-39", supersedes="f-min-python"),
            F("msrv@2", "fact", "Minimum supported Rust version (MSRV) is now 1.80, raised from 1.74 in 0.6.0; it lets the code use std::sync::LazyLock instead of once_cell. Declared as rust-version in Cargo.toml and checked by the msrv CI job.", [9, 10, 11, 15], entity="rust", tags=["msrv", "toolchain"], id="f-msrv", slot="rust.msrv"),
            F("pytest-84", "fact", "pytest 8.4 requires Python >= 3.9; after dependabot #279 bumped python/requirements-dev.txt to pytest==8.4.1 the 3.8 job failed with `Could not find a version that satisfies the requirement pytest==8.4.1`.", [1], entity="python", tags=["python", "pytest", "dependabot"]),
            F("py-download-share", "observation", "PyPI downloads of tern-sync by Python version (30 days to 2026-05-05): 3.8 1.9%, 3.9 6%, 3.12 41%.", [3], entity="python", tags=["python", "statistics", "pypi"]),
            F("release-060", "fact", "0.6.0 was released on 2026-05-05: config format v2 with `tern config migrate`, Python 3.9+ abi3 wheels, MSRV 1.80, once_cell replaced by std LazyLock.", [15], entity="release", tags=["release", "0.6.0"]),
            F("scout-py38-nightly", "observation", "Nightly python job on 3.8 failed three nights in a row (2026-05-02 to 2026-05-04) at `pip install -r python/requirements-dev.txt` (pytest==8.4.1 not available for 3.8).", [1], entity="ci", tags=["ci", "nightly", "python"], agent="scout"),
        ],
    ),
    # ------------------------------------------------------------------ 10
    Session(
        id="2026-05-12-nextest-ci-profile",
        start="2026-05-12T15:20",
        title="Fixing the debounce test for good and adding a nextest CI profile",
        summary=(
            "scout's weekly report showed 9 CI failures, including Windows timeouts in sync_after_remote_change and crates.io network errors. "
            "atlas made the debounce test deterministic with a paused tokio clock and synthetic events, un-ignored it and closed #231; the sleepy sync test now polls. "
            "A `ci` profile in .config/nextest.toml adds retries with backoff, fail-fast off and JUnit output, so CI now runs `cargo nextest run --profile ci`. "
            "maya accepted retries there on condition that scout reports every FLAKY test; CARGO_NET_RETRY=5 handles registry hiccups."
        ),
        turns=[
            "scout posted its weekly CI report. Give me the short version.",
            "scout's report for May 4 to 10: 143 CI runs, 9 failures. 4 were real failures in PR code, 3 were `tests/sync.rs::sync_after_remote_change` timing out on windows-2022 (one of the real-sleep tests listed in #231), and 2 were network: `warning: spurious network error (3 tries remaining): [28] Timeout was reached` fetching from crates.io.",
            "So the Windows sleep test is flaky now too. Great.",
            "Yes, it's the 1 s sleep waiting for a git fetch to land. Today I want to do two things: fix the debounce test properly with a controlled clock, and make the CI test run robust against network and runner hiccups with a dedicated nextest profile.",
            "Debounce first.",
            "The debouncer in src/watch.rs now takes its time from tokio, and the unit test uses `#[tokio::test(start_paused = true)]` (tokio's test-util feature): with time paused, `tokio::time::advance(Duration::from_millis(150))` between synthetic events is fully deterministic. Events are injected through a channel instead of writing real files, so FSEvents latency is out of the picture. One integration test still uses real files but only asserts between 1 and 5 events.",
            "And production uses the same clock?",
            "Yes, tokio::time::Instant everywhere; in production the clock is simply not paused. I ran the unit test in a loop 2000 times locally and 500 times on macos-14 via workflow_dispatch: 0 failures.",
            "Un-ignore it.",
            "Removed the #[ignore] and closed #231. sync_after_remote_change no longer sleeps: it polls FETCH_HEAD for up to 10 s. Same PR.",
            "Now the profile.",
            "In .config/nextest.toml: `[profile.ci]` with `retries = { backoff = \"exponential\", count = 2, delay = \"1s\" }`, `fail-fast = false`, `failure-output = \"immediate-final\"`, `slow-timeout = { period = \"60s\", terminate-after = 3 }`, and `[profile.ci.junit] path = \"junit.xml\"`. CI runs `cargo nextest run --profile ci --workspace --all-features` and uploads target/nextest/ci/junit.xml with actions/upload-artifact, so scout can parse results instead of scraping logs.",
            "Wait. Retries. We talked about this.",
            "You said retries are fine for environmental flakes, not for known-racy tests. The debounce test is deterministic now. The ci-profile retry is a safety net for network and runner hiccups, and any test that passes only on retry is marked FLAKY in junit.xml, which scout will flag every week, so nothing is hidden. The default profile, used locally, has no retries.",
            "OK, as long as every FLAKY gets reported. And fail-fast off is good, I want the full picture on a PR.",
            "Merged #284 \"test: deterministic debounce test, nextest ci profile\". CONTRIBUTING.md: CI uses `cargo nextest run --profile ci`; locally plain `cargo nextest run` is enough.",
            "And the crates.io network errors?",
            "Set `CARGO_NET_RETRY: 5` in the workflow env; cargo retries registry fetches that many times before failing the job.",
            "And make sure scout watches the FLAKY counts.",
            "Done: scout's instructions now say to report every test marked FLAKY in junit.xml, with links to the runs.",
        ],
        facts=[
            F("test-command@3", "procedure", "Test command: CI runs `cargo nextest run --profile ci --workspace --all-features` (profile in .config/nextest.toml: 2 retries with exponential backoff, fail-fast off, JUnit report at target/nextest/ci/junit.xml). On a dev machine plain `cargo nextest run` (default profile, no retries). Doctests still need `cargo test --doc`.", [11, 15], entity="tests", tags=["tests", "nextest", "ci", "cargo"], id="f-test-command", slot="tests.command"),
            F("flaky-debounce-fixed", "fact", "The flaky debounce test (debounce_coalesces_rapid_writes) is fixed and no longer ignored (#231 closed, PR #284): it uses `#[tokio::test(start_paused = true)]` with tokio::time::advance and synthetic events, so timing is deterministic. 0 failures in 2000 local and 500 macos-14 runs.", [5, 7, 9], entity="tests", tags=["flaky", "watcher", "tokio", "fixed"], id="f-flaky-debounce-fixed", supersedes="f-flaky-debounce"),
            F("scout-report-may", "observation", "Weekly CI report 2026-05-04..10: 143 runs, 9 failures. 4 real (PR code), 3 timeouts of tests/sync.rs::sync_after_remote_change on windows-2022, 2 crates.io network errors (`spurious network error ... [28] Timeout was reached`).", [1], entity="ci", tags=["ci", "report", "flaky"], agent="scout"),
            F("scout-flaky-watch", "procedure", "In every weekly CI report, list each test marked FLAKY in target/nextest/ci/junit.xml, with links to the runs.", [14, 19], entity="ci", tags=["ci", "flaky", "report", "nextest"], agent="scout"),
            F("retries-ci-only", "decision", "Retries exist only in the nextest `ci` profile, as a net for network/runner hiccups; the default profile has none. Anything that passes only on retry shows up as FLAKY and must be reported.", [12, 13, 14], entity="tests", tags=["retries", "flaky", "nextest"]),
            F("cargo-net-retry", "fact", "CI sets CARGO_NET_RETRY=5 in the workflow env to ride out crates.io network errors.", [16, 17], entity="ci", tags=["ci", "network", "cargo"]),
        ],
    ),
    # ------------------------------------------------------------------ 11
    Session(
        id="2026-05-19-release-cadence",
        start="2026-05-19T11:05",
        title="Releasing every two weeks; 0.7.0",
        summary=(
            "Because the config v2 fixes waited three weeks on main, maya moved releases from monthly to every two weeks, on Tuesdays. "
            "The Homebrew tap is now pushed directly by release.yml instead of through a PR, while maya's approval of the `release` environment stays. "
            "Since 0.8.0 would now come only four weeks after v2 shipped, the end of config v1 support was re-pinned to a date: the first release on or after 2026-07-01. "
            "0.7.0 was released the same day."
        ),
        turns=[
            "Monthly releases are too slow. The v2 config fixes sat on main for three weeks before anyone could use them, and people keep asking when the next release is.",
            "Options: release on every merge to main, weekly, or every two weeks. Each release costs you about 20 minutes: approving the environment, merging the tap PR, skimming the changelog.",
            "Every two weeks. Still Tuesdays. Today is a Tuesday, so 0.7.0 today and then every other Tuesday.",
            "So 0.7.0 today (May 19), then June 2, June 16, June 30 and so on. Security fixes still go out immediately as patches. I'll update RELEASING.md and the pinned discussion.",
            "Can we get the 20 minutes down?",
            "The tap PR can go: bump-homebrew-formula-action can commit straight to the tap's main branch if we drop `create-pullrequest: true`, and the tap has no CI of its own anyway. The environment approval I'd keep; it's the guard against a stray tag publishing.",
            "Agreed, keep the approval. Push the tap directly.",
            "Done. One knock-on effect: we promised v1 config is read through 0.7.x and dropped in 0.8.0. At monthly cadence that was about three months; at two weeks, 0.8.0 is June 2, only four weeks after v2 shipped.",
            "Too soon. People don't upgrade that fast. Make it 0.10.0.",
            "0.10.0 would be June 30 at the new cadence, about eight weeks after 0.6.0. Do you want a date instead of a version, so it doesn't move again if the cadence changes?",
            "Good point. Say: v1 support goes away in the first release on or after July 1, 2026.",
            "Updated docs/design/config-v2.md, the v1 warning text (\"...will stop being read in releases after 2026-07-01\") and the pinned discussion.",
            "Release notes for 0.7.0?",
            "git-cliff draft: feat: `tern status --json`; fix: the debounce race (#231) and the sync_after_remote_change timeout; perf: parallel link resolution. Plus a note that releases now happen every two weeks.",
            "Ship.",
            "Ran `scripts/release.sh 0.7.0`; release.yml is waiting for your approval in the `release` environment.",
            "approved",
            "0.7.0 is live on crates.io and PyPI, and the tap was updated by a direct push (commit 3f9c2e1 in mayalind/homebrew-tap). Hands-on time for you: one approval click.",
            "That's what I want.",
        ],
        facts=[
            F("release-cadence-biweekly", "decision", "Release cadence: every two weeks, on Tuesdays, starting with 0.7.0 on 2026-05-19 (then Jun 2, Jun 16, Jun 30, ...). Security fixes still get an immediate patch release.", [2, 3], entity="release", tags=["release", "cadence"], id="f-release-cadence-biweekly", slot="release.cadence"),
            F("release-procedure@2", "procedure", "How to cut a release: (1) `scripts/release.sh X.Y.Z` (bumps Cargo.toml, regenerates CHANGELOG.md with git-cliff, commits `chore(release): vX.Y.Z`, creates an annotated tag); (2) push the tag; (3) approve the `release` environment when release.yml asks; it then publishes wheels to PyPI (trusted publishing) and the crate to crates.io, and pushes the formula bump straight to mayalind/homebrew-tap (no tap PR since 0.7.0). Checklist in RELEASING.md.", [5, 6, 15, 17], entity="release", tags=["release", "procedure", "pypi", "crates.io", "homebrew"], id="f-release-procedure"),
            F("config-v1-sunset@2", "decision", "Config v1 support is removed in the first release on or after 2026-07-01 (previously 0.8.0, which the two-week cadence would have made too early). Deadlines are stated as dates so they don't move with the cadence.", [7, 8, 9, 10, 11], entity="config", tags=["config", "deprecation", "v1"], id="f-config-v1-sunset"),
            F("keep-approval-dup", "constraint", "Keep the manual approval on the `release` environment (maya clicks approve for every publish); it is the safeguard against an accidental tag publishing a release.", [5, 6], entity="release", tags=["release", "security", "github-actions"]),
        ],
    ),
    # ------------------------------------------------------------------ 12
    Session(
        id="2026-05-27-docs-deploy",
        start="2026-05-27T14:00",
        title="Automating docs deploys to Cloudflare Pages",
        summary=(
            "The docs site still showed config v1 because deploys were a manual `mkdocs gh-deploy`. "
            "atlas wrote scripts/deploy-docs.sh (`mkdocs build --strict` then `wrangler pages deploy`) and a docs.yml workflow that deploys on every push to main and posts preview URLs on PRs. "
            "Six broken anchors surfaced by --strict were fixed, docs.tern-sync.dev was moved to Cloudflare Pages, and only after maya checked it was the gh-pages branch deleted. "
            "maya also asked for shorter end-of-session summaries."
        ),
        turns=[
            "The docs site is stale again. docs.tern-sync.dev still shows the v1 config format.",
            "Deploys are manual: you run `mkdocs gh-deploy --force` from your laptop, which pushes the built site to the gh-pages branch that GitHub Pages serves. The last deploy was on 2026-04-02, before config v2.",
            "I always forget. Automate it. And honestly I'd like to get off GitHub Pages, there are no preview deploys for PRs.",
            "Cloudflare Pages gives preview URLs per branch, and we already have a Cloudflare account for the telemetry Worker. Plan: scripts/deploy-docs.sh builds with `mkdocs build --strict` into site/ and runs `npx wrangler pages deploy site --project-name tern-docs --branch \"$BRANCH\"`. A .github/workflows/docs.yml runs it on pushes to main (production) and on PRs that touch docs/ (preview).",
            "Why --strict?",
            "It turns mkdocs warnings into errors: broken internal links, anchors that no longer exist, pages missing from nav. Right now there are 6 warnings, mostly links to docs/config.md anchors that changed with v2. I'll fix them in the same PR.",
            "Good. Secrets?",
            "CLOUDFLARE_API_TOKEN, scoped to Pages:Edit on the tern-docs project only, and CLOUDFLARE_ACCOUNT_ID, as repo secrets; the production deploy runs in a `docs` environment on main only.",
            "DNS?",
            "docs.tern-sync.dev is a CNAME to mayalind.github.io right now. Adding the custom domain in the Cloudflare Pages project rewrites it to tern-docs.pages.dev, and since the zone is already on Cloudflare that's instant. After that I'd delete the gh-pages branch and docs/CNAME.",
            "Don't delete gh-pages until we know the new setup works.",
            "OK. First run failed in `mkdocs build --strict`: `WARNING - Doc file 'install.md' contains a link 'config.md#files-table', but the doc 'config.md' does not contain an anchor '#files-table'`. Fixed that and the other 5; the second run deployed to https://tern-docs.pages.dev.",
            T("The preview link on my PR works.", caption="GitHub PR #291 with a comment from github-actions[bot]: \"Docs preview for 7c1e04b deployed: https://docs-cloudflare-pages.tern-docs.pages.dev\", and a green check on the `docs / deploy (pull_request)` status."),
            "Then I'm switching the custom domain. docs.tern-sync.dev now comes from Cloudflare Pages: `curl -sI https://docs.tern-sync.dev | grep -i server` prints `server: cloudflare`.",
            "Checked it on my phone too, it's the new site. Now remove gh-pages.",
            "Deleted the gh-pages branch, turned off GitHub Pages in the repo settings and removed docs/CNAME. CONTRIBUTING.md: CI deploys on merge; to deploy by hand, run `scripts/deploy-docs.sh` with CLOUDFLARE_API_TOKEN set.",
            "What if Cloudflare is down while we merge?",
            "The docs job isn't a required check, so merges aren't blocked, and re-running the job or `scripts/deploy-docs.sh` redeploys idempotently. Rollback: `npx wrangler pages deployment list --project-name tern-docs`, then roll back to an older deployment from the Pages dashboard.",
            "Good. Unrelated: your end-of-day summaries are getting long. Three bullets max, I read them on my phone.",
            "Got it, three bullets from now on.",
        ],
        facts=[
            F("docs-deploy-cloudflare", "procedure", "Docs deploy: scripts/deploy-docs.sh runs `mkdocs build --strict` and `npx wrangler pages deploy site --project-name tern-docs`. .github/workflows/docs.yml does this on every push to main and posts a preview URL on PRs that touch docs/. docs.tern-sync.dev is served by Cloudflare Pages; the gh-pages branch is gone.", [3, 11, 13, 15], entity="docs", tags=["docs", "mkdocs", "cloudflare-pages", "deploy"], id="f-docs-deploy-cloudflare", slot="docs.deploy"),
            F("mkdocs-strict", "constraint", "The docs must build with `mkdocs build --strict`: any warning (broken link, missing anchor, page not in nav) fails the docs job.", [4, 5, 11], entity="docs", tags=["docs", "mkdocs", "ci"]),
            F("cloudflare-secrets", "fact", "Docs deploy secrets: CLOUDFLARE_API_TOKEN (Pages:Edit on the tern-docs project only) and CLOUDFLARE_ACCOUNT_ID; production deploys run in the `docs` environment, on main only.", [7], entity="docs", tags=["secrets", "cloudflare", "docs"]),
            F("docs-rollback", "procedure", "To undo a bad docs deploy: `npx wrangler pages deployment list --project-name tern-docs`, then roll back to an earlier deployment in the Cloudflare Pages dashboard. Re-running scripts/deploy-docs.sh is idempotent.", [16, 17], entity="docs", tags=["docs", "rollback", "cloudflare-pages"]),
            F("maya-verify-before-delete", "preference", "maya wants old infrastructure kept until its replacement has been verified (e.g. gh-pages was deleted only after the Cloudflare site was checked).", [10, 14], entity="maya", tags=["maya", "migration", "infra"]),
            F("scout-strict-warnings", "observation", "Before the docs migration, `mkdocs build --strict` on main reported 6 warnings, all anchors into docs/config.md that changed with config v2 (e.g. 'config.md#files-table').", [5, 11], entity="docs", tags=["docs", "links", "mkdocs"], agent="scout"),
            F("maya-short-summaries", "preference", "maya reads status updates on her phone: end-of-session summaries should be at most three bullets.", [18, 19], entity="maya", tags=["maya", "communication"], visibility="private"),
        ],
    ),
    # ------------------------------------------------------------------ 13
    Session(
        id="2026-06-04-code-review",
        start="2026-06-04T10:00",
        title="Writing down maya's code review preferences",
        summary=(
            "maya spelled out how she reviews so atlas could encode it in CONTRIBUTING.md (PR #301). "
            "PRs stay under about 400 changed lines with refactors separate; descriptions carry a Testing section; no unwrap/expect outside tests; PR titles are Conventional Commits because she squash-merges. "
            "She resolves her own review threads, wants new dependencies justified and license-checked (no GPL), and only reviews PRs that are green and out of draft. "
            "CI gained clippy unwrap/expect lints, cargo-deny and a PR-title check, for 7 required checks."
        ),
        turns=[
            "I reviewed your last three PRs and I want to write down how I like to review, so I stop repeating myself.",
            "Go ahead. I'll turn it into a review section in CONTRIBUTING.md and keep it in memory.",
            "First, size. Keep PRs under roughly 400 changed lines, not counting snapshots and lockfiles. #297 was 1,100 lines and I skimmed it, which is worse than no review.",
            "Under 400 lines excluding tests/snapshots/ and Cargo.lock. Anything bigger gets split into a stack.",
            "And refactors separate from behaviour changes, always. Second: the PR description needs a Testing section with the exact commands you ran and on which OS.",
            "Noted, e.g. \"Testing: `cargo nextest run` on macOS 14; `cargo test --doc`; manual `tern link` in a Windows 11 VM\".",
            "Third: no `unwrap()` or `expect()` in non-test code unless there's a comment explaining why it can't fail. Use `?` with context.",
            "The binary (src/main.rs, src/cli/) uses anyhow and the library crate crates/tern-core uses thiserror enums. So `.with_context(|| format!(\"reading {}\", path.display()))` in the binary and typed errors in core. I can enable `clippy::unwrap_used` and `clippy::expect_used` for non-test code; with -D warnings they become errors.",
            "Do that. Fourth: I squash-merge, and the PR title becomes the commit subject, so the title has to be a conventional commit, like `fix(link): ...`.",
            "We already need that for git-cliff. I'll add amannn/action-semantic-pull-request so a bad title fails CI right away.",
            "Fifth: don't resolve my review comments yourself. I resolve them when I'm satisfied. Reply with what you changed and the commit hash.",
            "Got it: reply \"done in abc1234\" and leave the thread open for you.",
            "Sixth, smaller: don't add dependencies without saying why in the PR description. And check licenses: we're MIT/Apache-2.0 dual licensed, no GPL dependencies.",
            "I'll add cargo-deny with a deny.toml: allow MIT, Apache-2.0, BSD-2-Clause, BSD-3-Clause, ISC, Unicode-3.0 and Zlib; anything GPL, LGPL or AGPL is denied. CI runs `cargo deny check licenses bans`.",
            "Great. And generally: if something is ambiguous, ask me before implementing it. I'd rather answer a question than review the wrong thing.",
            "Understood. Last question: do you want review requests on draft PRs?",
            "No. Only request review when CI is green and it's actually ready. I ignore drafts.",
            "Added: \"Request review only when CI is green; drafts are not reviewed.\" Opened #301 with the CONTRIBUTING.md review section, the unwrap_used/expect_used lints, cargo-deny and the PR title check.",
            "Perfect, merging.",
            "Merged. CI now has 7 required checks: fmt, clippy, test (3 OS), msrv, python, deny and pr-title.",
        ],
        facts=[
            F("pr-size", "preference", "Keep PRs under ~400 modified lines (not counting tests/snapshots/ and Cargo.lock); bigger work is split into a stack, and refactors go in separate PRs from behaviour changes. #297 at 1,100 lines only got skimmed.", [2, 3, 4], entity="review", tags=["review", "pull-requests"]),
            F("pr-testing-section", "preference", "Every PR description needs a \"Testing\" section listing the exact commands that were run and the OS, e.g. `cargo nextest run` on macOS 14, `cargo test --doc`, manual `tern link` in a Windows 11 VM.", [4, 5], entity="review", tags=["review", "pull-requests", "testing"]),
            F("no-unwrap", "constraint", "No unwrap() or expect() in non-test code unless a comment says why it can't fail; use `?` with context. clippy::unwrap_used and clippy::expect_used enforce it. Errors: anyhow in the binary (src/main.rs, src/cli/), thiserror enums in crates/tern-core.", [6, 7, 8], entity="code-style", tags=["rust", "errors", "clippy", "review"]),
            F("pr-title-dup", "preference", "maya squash-merges, so the PR title becomes the commit subject and must be a Conventional Commit (`fix(link): ...`); amannn/action-semantic-pull-request checks it.", [8, 9], entity="review", tags=["review", "commits", "conventional-commits"]),
            F("review-threads", "preference", "Don't resolve maya's review comments; she resolves them herself. Reply with what changed and the commit hash (\"done in abc1234\").", [10, 11], entity="review", tags=["review", "etiquette"]),
            F("licenses", "constraint", "Dependencies must be license-compatible with tern's MIT/Apache-2.0 dual license: cargo-deny (deny.toml) allows MIT, Apache-2.0, BSD-2/3-Clause, ISC, Unicode-3.0, Zlib and denies GPL/LGPL/AGPL; CI runs `cargo deny check licenses bans`. Every new dependency is justified in the PR description.", [12, 13], entity="dependencies", tags=["licenses", "cargo-deny", "dependencies"]),
            F("ask-first", "preference", "When a requirement is ambiguous, ask maya before implementing; she prefers answering a question to reviewing the wrong thing.", [14], entity="maya", tags=["maya", "communication"]),
            F("no-drafts", "preference", "Request maya's review only when CI is green and the PR is ready; she doesn't review drafts.", [15, 16, 17], entity="review", tags=["review", "pull-requests"]),
            F("required-checks", "fact", "Required CI checks on main (since #301): fmt, clippy, test (ubuntu, macOS, Windows), msrv, python, deny, pr-title.", [19], entity="ci", tags=["ci", "branch-protection"]),
        ],
    ),
    # ------------------------------------------------------------------ 14
    Session(
        id="2026-06-16-remove-telemetry",
        start="2026-06-16T09:30",
        title="Removing telemetry; release 0.9.0",
        summary=(
            "Telemetry was removed: under 1% of users opted in, issue #305 objected to any telemetry in a dotfiles tool, and Neon wanted a paid plan. "
            "PR #309 deleted the telemetry module, the `tern telemetry` subcommand (which now fails with a clear error), the Worker and the ureq dependency; maya deleted the Neon project and the raw events. "
            "Aggregate numbers were kept in docs/telemetry.md, and deny.toml now bans HTTP client crates. "
            "0.9.0 shipped in the regular two-week slot; maya will be away June 22 to July 3."
        ),
        turns=[
            "Let's talk about telemetry. I'm leaning towards removing it entirely.",
            "Numbers since 0.5.0 (April 7 to June 15): 212 distinct anonymous ids against roughly 35k PyPI downloads plus crates.io, so well under 1% opted in. Subcommands: link 48%, status 31%, sync 15%, config migrate 4%. OS: macOS 52%, Linux 44%, Windows 4%.",
            "So we learned link and status are popular, which I knew. Issue #305 is a long thread of people upset that a dotfiles tool has telemetry at all, even opt-in. And Neon keeps emailing me about moving off the free plan.",
            "Then the cost-benefit is clearly negative. Removal plan: (1) delete the telemetry module and the `tern telemetry` subcommand; (2) keep accepting `telemetry = true` in configs, since v2 rejects unknown keys and old configs would otherwise break; (3) tear down the Worker and the Neon database; (4) rewrite docs/telemetry.md to say it was removed and what happened to the data.",
            "For (1), don't silently accept it. If someone runs `tern telemetry enable` they should get a clear error saying telemetry is gone. For the config key, a one-line warning is fine.",
            "So `tern telemetry ...` exits 2 with \"error: telemetry was removed in tern 0.9.0; nothing is collected. See https://docs.tern-sync.dev/telemetry/\", and the config key is accepted with \"warning: `telemetry` in tern.toml is ignored since 0.9.0 and can be removed\".",
            "Yes. Fail loudly, don't pretend.",
            "The data: 61,400 rows in `events`. Do you want anything kept before the drop?",
            "Keep the aggregate numbers you just gave me on the docs page, delete all raw rows, then delete the Neon project. I'll do the Neon part myself.",
            "I'll run `npx wrangler delete --name tern-telemetry` and remove the t.tern-sync.dev DNS record; the DATABASE_URL secret goes away with the Worker. You delete the Neon project. I'm also removing infra/telemetry-worker/ from the repo.",
            "Neon project deleted.",
            "Confirmed: the Worker is gone and `curl -s -o /dev/null -w '%{http_code}' https://t.tern-sync.dev/v1/events` prints 000 because the DNS record is gone. PR #309 \"feat!: remove telemetry\" deletes src/telemetry.rs, infra/telemetry-worker/ and the ureq dependency (only telemetry used it; the binary shrinks by 410 KB), and rewrites docs/telemetry.md.",
            "Nice side effect on the binary size. Changelog wording?",
            "Under Breaking: \"Removed opt-in usage telemetry and the `tern telemetry` subcommand. Nothing is collected anymore; all previously collected raw events were deleted on 2026-06-16.\" With a link to #305.",
            "Good. This goes into today's 0.9.0.",
            "Running `scripts/release.sh 0.9.0`. For the record: 0.8.0 went out on June 2 with the Windows long-path fix, so this is the regular two-week slot.",
            "approved",
            "0.9.0 is published on crates.io, PyPI and the tap. I commented on #305 and closed it.",
            "Thanks. Make sure nobody re-adds telemetry by accident, like a dependency that phones home.",
            "Added bans to deny.toml: ureq, reqwest and hyper are banned for crates/tern-core and the binary, with a comment pointing at #305; `cargo deny check bans` passes.",
            "One more thing: I'm off from June 22 to July 3. Skip the June 30 release unless there's a security fix.",
            "Noted. No release on June 30; the next regular one is July 14, and anything security-related I'll prepare and wait for your approval.",
        ],
        facts=[
            F("telemetry@deleted", "decision", "Opt-in usage telemetry was removed in 0.9.0 (2026-06-16): the telemetry module and subcommand are gone and nothing is collected.", [3, 11], entity="telemetry", tags=["telemetry", "removed"], id="f-telemetry", status="deleted"),
            F("telemetry-db@deleted", "fact", "The telemetry Worker (t.tern-sync.dev) and the Neon Postgres `events` table were torn down on 2026-06-16.", [8, 9, 10, 11], entity="telemetry", tags=["telemetry", "postgres", "removed"], id="f-telemetry-db", status="deleted"),
            F("telemetry-removed", "decision", "tern collects no usage data anymore (removed in 0.9.0, PR #309, after #305): `tern telemetry ...` exits 2 with \"telemetry was removed in tern 0.9.0\"; a leftover `telemetry` key in tern.toml is accepted with a warning. All raw events were deleted; only aggregate numbers remain in docs/telemetry.md.", [3, 4, 5, 8, 11, 13], entity="telemetry", tags=["telemetry", "privacy", "removed"]),
            F("telemetry-stats", "observation", "Final telemetry numbers (2026-04-07..06-15): 212 anonymous ids (<1% opt-in). Subcommands: link 48%, status 31%, sync 15%, config migrate 4%. OS: macOS 52%, Linux 44%, Windows 4%.", [1], entity="telemetry", tags=["telemetry", "statistics"]),
            F("ban-http-clients", "constraint", "No phone-home: deny.toml bans ureq, reqwest and hyper for crates/tern-core and the binary (see #305), so telemetry can't come back through a dependency.", [18, 19], entity="dependencies", tags=["cargo-deny", "privacy", "dependencies"]),
            F("maya-fail-loudly-dup", "preference", "maya: removed or unsupported features should fail loudly with a clear error instead of being silently accepted (\"fail loudly, don't pretend\").", [4, 6], entity="maya", tags=["maya", "errors", "design"]),
            F("release-080-090", "fact", "0.8.0 was released on 2026-06-02 (Windows long-path fix) and 0.9.0 on 2026-06-16 (telemetry removed), both in the regular two-week slots.", [15, 17], entity="release", tags=["release", "0.8.0", "0.9.0"]),
            F("maya-away", "fact", "maya is away 2026-06-22 to 2026-07-03: no release on June 30 (next regular one July 14); security fixes are prepared but wait for her approval.", [20, 21], entity="maya", tags=["maya", "availability", "release"], visibility="private"),
            F("scout-report-june", "observation", "Weekly CI report 2026-06-08..14: 96 runs, 2 failures, both real; no test marked FLAKY in junit.xml since the nextest ci profile landed.", [], entity="ci", tags=["ci", "report", "flaky"], agent="scout"),
        ],
    ),
]


# Queries: `relevant` names facts by F.key, turns/summaries by "<session>#<seq>" / "<session>#summary".
QUERIES: list[dict[str, object]] = [
    {"query": "Windows os error 123 when running tern link", "relevant": ["windows-212"],
     "note": "lexical: the error code and command appear verbatim in the bug fact (and in the screenshot caption of 2026-03-17-windows-paths#0)"},
    {"query": "release procedure: how do I publish a new version to crates.io and PyPI", "relevant": ["release-procedure@2"],
     "note": "f-release-procedure has two versions; only the 0.7.0 one (tap pushed directly, no tap PR) is current"},
    {"query": "is the flaky debounce test still ignored?", "relevant": ["flaky-debounce-fixed"],
     "note": "f-flaky-debounce-fixed supersedes f-flaky-debounce (the quarantine); the fixed one must rank in the top 5"},
    {"query": "does tern still collect telemetry?", "relevant": ["telemetry-removed"],
     "note": "f-telemetry and f-telemetry-db end in a `deleted` version; the active answer is the removal decision"},
    {"query": "how do I convert an old v1 config file to the new format", "relevant": ["config-migrate"],
     "note": "procedure for `tern config migrate`"},
    {"query": "How many lines can a pull request have?", "relevant": ["pr-size"],
     "note": "review preference from 2026-06-04-code-review"},
    {"query": "which dependency licenses are allowed", "relevant": ["licenses"],
     "note": "cargo-deny license policy"},
    {"query": "why doesn't tern copy files when it can't create a symlink on Windows", "relevant": ["symlink-no-fallback"],
     "note": "decision from the os error 1314 discussion; maya's explicit-over-magic preference is a plausible neighbour"},
    {"query": "how do I roll back a bad docs deployment", "relevant": ["docs-rollback"],
     "note": "wrangler pages deployment list / dashboard rollback"},
    {"query": "how are misspelled settings reported?", "relevant": ["config-typo-errors"],
     "note": "paraphrase: shares no content word with the answer ('Config typos give a precise error ... unknown field ... line 7, column 1')"},
    {"query": "how does the documentation website get published?", "relevant": ["docs-deploy-cloudflare"],
     "note": "paraphrase: the answer says 'Docs deploy: scripts/deploy-docs.sh ... wrangler pages deploy'; the older GitHub Pages fact shares slot docs.deploy and must not be preferred"},
    {"query": "Which interpreter versions are no longer supported?", "relevant": ["min-python-39"],
     "note": "paraphrase: answer is 'Python 3.8 was dropped ... requires-python >=3.9'; it supersedes f-min-python"},
    {"query": "how do I execute the unit suite?", "relevant": ["test-command@3"],
     "note": "paraphrase: 'cargo nextest run' shares no word with the query; three versions of f-test-command, only the third (--profile ci) is current"},
    {"query": "what is the current minimum supported Rust version?", "relevant": ["msrv@2"],
     "note": "temporal: f-msrv went 1.74 -> 1.80; the current version is 1.80"},
    {"query": "what is the latest release cadence?", "relevant": ["release-cadence-biweekly"],
     "note": "temporal: slot release.cadence, monthly (March) replaced by every two weeks (May)"},
]

# Which supersession mechanism each case exercises (for the report and the validation below).
SUPERSESSION = [
    ("a: same id, 3 versions, one slot", "f-test-command", "tests.command"),
    ("a: same id, 2 versions, one slot", "f-msrv", "rust.msrv"),
    ("a: same id, 2 versions, no slot", "f-release-procedure", None),
    ("a: same id, 2 versions, no slot", "f-config-v1-sunset", None),
    ("b: supersedes", "f-min-python-39 -> f-min-python", None),
    ("b: supersedes", "f-flaky-debounce-fixed -> f-flaky-debounce", None),
    ("b: supersedes + superseded_by version + slot", "f-config-format-v2 -> f-config-format-v1", "config.format"),
    ("c: shared slot", "f-release-cadence-monthly -> f-release-cadence-biweekly", "release.cadence"),
    ("c: shared slot", "f-docs-deploy-ghpages -> f-docs-deploy-cloudflare", "docs.deploy"),
    ("b: superseded_by version (a plan carried out)", "f-nextest-eval -> f-test-command", None),
    ("d: deleted version", "f-telemetry", None),
    ("d: deleted version", "f-telemetry-db", None),
]


def _ts(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def _minutes_for(text: str) -> int:
    """Minutes until the next turn: longer messages take longer to write."""
    return min(6, 1 + len(text) // 180)


# C901 (build, validate): the demo data set's generator and its self-check, run by hand when the data is
# edited; each branch is one kind of record or one invariant of the data, read top to bottom.
def build() -> tuple[list[dict[str, object]], dict[str, str]]:  # noqa: C901
    """All records in file order, and F.key -> source_id."""
    records: list[dict[str, object]] = []
    keymap: dict[str, str] = {}
    fact_no = 0
    for s in SESSIONS:
        now = datetime.fromisoformat(s.start)
        for seq, raw in enumerate(s.turns):
            turn = raw if isinstance(raw, T) else T(raw)
            rec: dict[str, object] = {
                "type": "turn",
                "source_id": f"{s.id}#{seq}",
                "created_at": _ts(now),
                "workspace": WORKSPACE,
                "agent": "atlas",
                "session": s.id,
                "seq": seq,
                "speaker": "maya" if seq % 2 == 0 else "atlas",
                "content": turn.text,
            }
            if turn.caption:
                rec["caption"] = turn.caption
            records.append(rec)
            now += timedelta(minutes=_minutes_for(turn.text))
        now += timedelta(minutes=2)
        records.append({
            "type": "summary",
            "source_id": f"{s.id}#summary",
            "created_at": _ts(now),
            "workspace": WORKSPACE,
            "agent": "atlas",
            "session": s.id,
            "title": s.title,
            "content": s.summary,
        })
        for f in s.facts:
            now += timedelta(minutes=1)
            fact_no += 1
            sid = f"fact-{fact_no:03d}"
            if f.key in keymap:
                raise SystemExit(f"duplicate fact key {f.key}")
            keymap[f.key] = sid
            rec = {
                "type": "fact",
                "source_id": sid,
                "created_at": _ts(now),
                "workspace": WORKSPACE,
                "agent": f.agent,
            }
            if f.visibility:
                rec["visibility"] = f.visibility
            if f.id:
                rec["id"] = f.id
            rec["kind"] = f.kind
            if f.entity:
                rec["entity"] = f.entity
            if f.slot:
                rec["slot"] = f.slot
            if f.status:
                rec["status"] = f.status
            if f.supersedes:
                rec["supersedes"] = f.supersedes
            if f.superseded_by:
                rec["superseded_by"] = f.superseded_by
            rec["tags"] = list(f.tags)
            if f.refs:
                rec["refs"] = [f"{s.id}#{n}" for n in f.refs]
            rec["session"] = s.id
            rec["content"] = f.content
            records.append(rec)
    return records, keymap


def build_queries(keymap: dict[str, str]) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for q in QUERIES:
        relevant: list[str] = list(q["relevant"])  # type: ignore[call-overload]
        rel = [keymap.get(str(k), str(k)) for k in relevant]
        out.append({"query": q["query"], "relevant_source_ids": rel, "note": q["note"]})
    return out


# ---------------------------------------------------------------- validation

_REQUIRED = {
    "fact": ("type", "source_id", "created_at", "content"),
    "summary": ("type", "source_id", "created_at", "content", "session"),
    "turn": ("type", "source_id", "created_at", "content", "session", "seq", "speaker"),
}
_STOP = frozenset(
    """a an the and or but nor if then else so than that this these those there here i me my mine myself we us our
    ours ourselves you your yours yourself yourselves he him his himself she her hers herself it its itself they them
    their theirs themselves is am are was were be been being do does did doing have has had having will would shall
    should can could may might must of at by for with about against between into through during before after above
    below to from up down in out on off over under again further once what which who whom whose when where why how
    all any both each few more most other some such no not only own same too very s t just don now also as""".split()
)


def _words(text: str) -> set[str]:
    out = set()
    for w in re.findall(r"[a-z0-9]+", text.lower()):
        if w in _STOP:
            continue
        for suffix in ("ing", "ed", "es", "s"):
            if w.endswith(suffix) and len(w) - len(suffix) >= 3:
                w = w[: -len(suffix)]
                break
        out.add(w)
    return out


def validate(path: Path, queries_path: Path) -> dict[str, int]:  # noqa: C901
    lines = jsonl_lines(path.read_text(encoding="utf-8"))
    recs = [json.loads(line) for line in lines]  # every line parses
    counts: dict[str, int] = {}
    turn_ids: set[str] = set()
    fact_ids: set[str] = set()
    source_ids: set[str] = set()
    seqs: dict[str, set[int]] = {}
    for r in recs:
        t = r["type"]
        counts[t] = counts.get(t, 0) + 1
        for k in _REQUIRED[t]:
            assert k in r and r[k] not in (None, ""), (r["source_id"], k)
        assert r["workspace"] == WORKSPACE
        assert r["source_id"] not in source_ids, r["source_id"]
        source_ids.add(r["source_id"])
        datetime.fromisoformat(r["created_at"])
        if t == "turn":
            assert isinstance(r["seq"], int) and r["seq"] >= 0
            assert r["seq"] not in seqs.setdefault(r["session"], set()), r["source_id"]
            seqs[r["session"]].add(r["seq"])
            assert r["source_id"] == f"{r['session']}#{r['seq']}"
            turn_ids.add(r["source_id"])
        if t == "fact":
            assert re.fullmatch(r"fact-\d{3}", r["source_id"])
            if "id" in r:
                assert is_memory_id(r["id"])
                fact_ids.add(r["id"])
            assert r.get("status", "active") in ("active", "superseded", "deleted")
    # turns: contiguous seqs, alternating speakers, increasing time
    by_session: dict[str, list[dict[str, object]]] = {}
    for r in recs:
        if r["type"] == "turn":
            by_session.setdefault(r["session"], []).append(r)
    for sess, turns in by_session.items():
        assert sorted(seqs[sess]) == list(range(len(turns))), sess
        assert 12 <= len(turns) <= 25, (sess, len(turns))
        for a, b in itertools.pairwise(turns):
            assert a["speaker"] != b["speaker"], (sess, b["seq"])
            assert datetime.fromisoformat(str(a["created_at"])) < datetime.fromisoformat(str(b["created_at"]))
    for r in recs:
        for ref in r.get("refs", []):
            assert ref in turn_ids, (r["source_id"], ref)
        for k in ("supersedes", "superseded_by"):
            if k in r:
                assert r[k] in fact_ids, (r["source_id"], k, r[k])
    # queries
    queries = json.loads(queries_path.read_text(encoding="utf-8"))
    by_sid = {r["source_id"]: r for r in recs}
    for q in queries:
        for sid in q["relevant_source_ids"]:
            assert sid in by_sid, (q["query"], sid)
            rec = by_sid[sid]
            assert rec.get("status", "active") == "active", (q["query"], sid)
            assert rec.get("visibility", "workspace") == "workspace", (q["query"], sid)
        if q["note"].startswith("paraphrase"):
            qw = _words(q["query"])
            for sid in q["relevant_source_ids"]:
                mem_id = by_sid[sid].get("id")
                for rec in recs:  # the answer and every other version of the same memory
                    if rec["source_id"] != sid and (mem_id is None or rec.get("id") != mem_id):
                        continue
                    text = " ".join([str(rec["content"]), str(rec.get("entity", "")), " ".join(rec.get("tags", []))])
                    shared = qw & _words(text)
                    assert not shared, (q["query"], rec["source_id"], shared)
    return counts


def main() -> int:
    records, keymap = build()
    with MEMORY_PATH.open("w", encoding="utf-8", newline="\n") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    queries = build_queries(keymap)
    QUERIES_PATH.write_text(json.dumps(queries, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    counts = validate(MEMORY_PATH, QUERIES_PATH)
    total = sum(counts.values())
    print(f"wrote {MEMORY_PATH.name}: {total} records {counts}; {QUERIES_PATH.name}: {len(queries)} queries")
    return 0


if __name__ == "__main__":
    sys.exit(main())
