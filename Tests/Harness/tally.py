#!/usr/bin/env python3
"""Counts what a test pass ran, against what the tree declares, and fails when they disagree.

    tally.py unit RESULTS     after `swift test` wrote RESULTS/unit.jsonl (Swift Testing's event stream, version 0)
                              and RESULTS/unit.log (its output, with XCTest's)
    tally.py kernel-filter RESULTS   prints the --filter that selects the tests tagged `.kernel` in the unit pass
    tally.py kernel RESULTS   after the kernel pass wrote RESULTS/kernel.jsonl
    tally.py summary RESULTS  prints the tiers' lines (RESULTS/*.tally), and fails if one is missing

The tree declares its tests in Tests/: every `@Test` (Swift Testing) and every `func test...()` (XCTest). The unit
pass must run each of them, or skip it with its reason; a test skipped because it needs the kernel harness must
carry the `.kernel` tag (else the kernel pass would never select it). The kernel pass must run every test tagged
`.kernel`. With NETDEVD_REQUIRE_KERNEL_TESTS set (CI), a skipped test is a failure, except a kernel test in the
unit pass (it runs in the kernel pass).
"""

import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
KERNEL_TAG = ".kernel"
KERNEL_REASON = "needs root in a throw-away network namespace"
REQUIRED = bool(os.environ.get("NETDEVD_REQUIRE_KERNEL_TESTS"))


def declared():
    """The Swift Testing tests Tests/ declares, as (`Module/File.swift`, line) of each `@Test` (the place the event
    stream names), and how many XCTest methods (`func test...()` in a file that uses XCTestCase)."""
    swift_testing, xctest = set(), 0
    for path in (ROOT / "Tests").rglob("*.swift"):
        text = path.read_text()
        place = f"{path.relative_to(ROOT / 'Tests').parts[0]}/{path.name}"
        for number, line in enumerate(text.splitlines(), start=1):
            if re.match(r"\s*(@\w+(\([^)]*\))?\s+)*@Test\b", line):
                swift_testing.add((place, number))
            elif "XCTestCase" in text and re.match(r"\s*func test\w*\(\)", line):
                xctest += 1
    return swift_testing, xctest


class Stream:
    """One pass's Swift Testing event stream: its tests and what became of each."""

    def __init__(self, path):
        self.functions = {}  # id -> (tags, display name)
        self.places = {}  # id -> (Module/File.swift, line)
        self.parameterized = set()
        self.suites = {}
        self.skipped = {}  # id -> reason
        self.started = set()
        self.cases = set()  # parameterized tests that ran at least one case
        self.failed = set()
        self.ended = False
        for line in Path(path).read_text().splitlines():
            record = json.loads(line)
            payload = record["payload"]
            if record["kind"] == "test":
                entry = (set(payload.get("_tags", [])), payload.get("displayName") or payload["name"])
                (self.functions if payload["kind"] == "function" else self.suites)[payload["id"]] = entry
                location = payload.get("sourceLocation", {})
                self.places[payload["id"]] = (location.get("fileID"), location.get("line"))
                if payload.get("isParameterized"):
                    self.parameterized.add(payload["id"])
                continue
            kind = payload["kind"]
            test = payload.get("testID") or "(no test)"
            if kind == "testSkipped":
                self.skipped[test] = " ".join(payload.get("_comments", [])) or payload["messages"][0]["text"]
            elif kind in ("_testCancelled", "_testCaseCancelled"):
                # Test.cancel(): it did not run to its end, whatever it checked before.
                self.skipped.setdefault(test, "cancelled: " + " ".join(payload.get("_comments", [])))
            elif kind == "testStarted":
                self.started.add(test)
            elif kind == "testCaseStarted":
                self.cases.add(test)
            elif kind == "issueRecorded" and not payload.get("issue", {}).get("isKnown"):
                self.failed.add(test)
            elif kind == "runEnded":
                self.ended = True

    def ran(self, test):
        """Started, and for a parameterized test at least one case (no arguments means nothing ran)."""
        return test in self.started and (test not in self.parameterized or test in self.cases)

    def skip_reason(self, test):
        """Why `test` was skipped (itself or a suite around it), or None."""
        while test:
            if test in self.skipped:
                return self.skipped[test]
            test = test.rpartition("/")[0] if "/" in test else test.rpartition(".")[0]
        return None

    def kernel(self):
        return sorted(test for test, (tags, _) in self.functions.items() if KERNEL_TAG in tags)


def name(test):
    """`Module.Suite/function()` without its source location."""
    return re.sub(r"/[^/]+\.swift:\d+:\d+$", "", test)


def skips(skipped):
    """Skipped tests grouped by reason, a few names each."""
    by_reason = {}
    for test, reason in skipped.items():
        by_reason.setdefault(reason, []).append(test)
    lines = ""
    for reason, tests in by_reason.items():
        more = f" and {len(tests) - 3} more" if len(tests) > 3 else ""
        lines += f"\n  skipped ({len(tests)}): {', '.join(tests[:3])}{more}: {reason}"
    return lines


def write(results, tier, line, problems):
    print(f"{tier}: {line}")
    for problem in problems:
        print(f"  {tier} tier: {problem}")
    (results / f"{tier}.tally").write_text(line + "\n")
    if problems:
        (results / f"{tier}.tally").write_text(f"FAILED ({len(problems)} problems): {line}\n")
        sys.exit(1)


def unit(results):
    stream = Stream(results / "unit.jsonl")
    log = (results / "unit.log").read_text(errors="replace")
    swift_testing, xctest = declared()
    problems = []
    if not stream.ended:
        problems.append("the Swift Testing run did not end (crashed?): see unit.log")
    built = {stream.places[test] for test in stream.functions}
    for places, what in ((swift_testing - built, "declared in Tests/ but not in the test binary (not built?)"),
                         (built - swift_testing, "in the test binary but not seen declared in Tests/")):
        if places:
            listed = ", ".join(f"{file}:{line}" for file, line in sorted(places)[:5])
            more = f" and {len(places) - 5} more" if len(places) > 5 else ""
            problems.append(f"{len(places)} tests {what}: {listed}{more}")
    executed = re.findall(r"Test Suite 'All tests' (?:passed|failed).*\n\s*Executed (\d+) tests?, with (\d+) failures?", log)
    ran_xctest, failed_xctest = (int(executed[-1][0]), int(executed[-1][1])) if executed else (0, 0)
    skipped_xctest = len(re.findall(r"^Test Case '.*' skipped", log, re.MULTILINE))
    if ran_xctest != xctest:
        problems.append(f"XCTest ran {ran_xctest} tests, Tests/ declares {xctest} (func test...)")
    kernel = set(stream.kernel())
    passed = skipped_kernel = 0
    others = {}
    for test, (tags, display) in sorted(stream.functions.items()):
        reason = stream.skip_reason(test)
        if reason is None:
            if test in kernel:
                problems.append(f"{name(test)} is tagged .kernel but ran outside the harness (KernelHarness.enabled?)")
            if not stream.ran(test):
                problems.append(f"{name(test)} was neither run nor skipped")
            elif test not in stream.failed:
                passed += 1
            continue
        if test in kernel:
            skipped_kernel += 1
        elif KERNEL_REASON in reason:
            problems.append(f"{name(test)} is skipped for the kernel harness but is not tagged .kernel: "
                            "make test-kernel would never run it")
        else:
            others[name(test)] = reason
    if skipped_xctest:
        others["XCTest"] = f"{skipped_xctest} XCTest cases skipped (see unit.log)"
    if REQUIRED and others:
        problems.append(f"{len(others)} tests skipped where NETDEVD_REQUIRE_KERNEL_TESTS says every one must run")
    if stream.failed:
        problems.append(f"{len(stream.failed)} tests failed: {', '.join(sorted(name(t) for t in stream.failed))}")
    line = (f"{passed + ran_xctest - failed_xctest - skipped_xctest} passed of {len(swift_testing) + xctest} declared "
            f"({len(swift_testing)} Swift Testing, {xctest} XCTest); {skipped_kernel} kernel tests left to the kernel "
            f"pass; {len(others)} skipped")
    line += skips(others)
    write(results, "unit", line, problems)


def kernel_filter(results):
    tests = Stream(results / "unit.jsonl").kernel()
    if not tests:
        sys.exit("tally.py: the unit pass saw no test tagged .kernel")
    print("^(" + "|".join(re.escape(name(test)) for test in tests) + ")(/|$)")


def kernel(results):
    # Compared by name: a test's ID also holds its line, which an edit between the passes may move.
    selected = {name(test) for test in Stream(results / "unit.jsonl").kernel()}
    stream = Stream(results / "kernel.jsonl")
    problems = []
    if not stream.ended:
        problems.append("the kernel pass did not end (crashed?)")
    ran = set(stream.functions)
    for test in sorted(selected - {name(test) for test in ran}):
        problems.append(f"{test} is tagged .kernel but the kernel pass did not see it")
    for test in sorted(test for test in ran if name(test) not in selected):
        problems.append(f"{name(test)} ran in the kernel pass without the .kernel tag")
    skipped = {name(test): stream.skip_reason(test) for test in sorted(ran) if stream.skip_reason(test) is not None}
    not_run = [t for t in ran if stream.skip_reason(t) is None and not stream.ran(t)]
    problems += [f"{name(test)} was neither run nor skipped" for test in not_run]
    passed = len([t for t in ran if stream.skip_reason(t) is None and stream.ran(t) and t not in stream.failed])
    if stream.failed:
        problems.append(f"{len(stream.failed)} tests failed: {', '.join(sorted(name(t) for t in stream.failed))}")
    if REQUIRED:
        if skipped:
            problems.append(f"{len(skipped)} tests skipped where NETDEVD_REQUIRE_KERNEL_TESTS says every one must run")
    line = f"{passed} passed of {len(selected)} tagged .kernel ({len(skipped)} skipped)"
    line += skips(skipped)
    write(results, "kernel", line, problems)


def summary(results):
    missing = False
    for tier in ("unit", "kernel", "end-to-end", "fuzz", "soak"):
        path = results / f"{tier}.tally"
        if path.exists():
            first = path.read_text().splitlines()[0]
            print(f"{tier}: {first}")
            missing |= first.startswith(("FAILED", "skipped"))
        else:
            print(f"{tier}: no count (the tier did not run)")
            missing = True
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("unit", "kernel-filter", "kernel", "summary"):
        sys.exit(__doc__)
    command, folder = sys.argv[1], Path(sys.argv[2])
    folder.mkdir(parents=True, exist_ok=True)
    {"unit": unit, "kernel-filter": kernel_filter, "kernel": kernel, "summary": summary}[command](folder)
