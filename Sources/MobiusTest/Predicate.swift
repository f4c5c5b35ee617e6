internal import IssueReporting

/// The verdict of one predicate: success, or a failure message with the place the predicate was written.
public enum PredicateResult {
    /// The predicate holds.
    case success
    /// The predicate does not hold; `file` and `line` point at the predicate in the test.
    case failure(message: String, file: StaticString, line: UInt)
}

/// A check on a value (a `Next`, a `First`) that says why it failed.
public typealias Predicate<T> = (T) -> PredicateResult

/// Reports a failed check. The default reports to whichever test framework is running (Swift Testing or
/// XCTest); pass `XCTFail` or your own function to do otherwise.
public typealias AssertionFailure = (String, StaticString, UInt) -> Void

/// Reports `message` as a test failure at `file`:`line` to the running test framework: Swift Testing's
/// `Issue.record` inside a `@Test`, `XCTFail` inside an XCTest case. `file` is a `#file` (in Swift 6, a
/// `#fileID` such as `MyTests/CounterTests.swift`), as the predicates' defaults give.
public func reportTestFailure(_ message: String, file: StaticString, line: UInt) {
    reportIssue(message, fileID: file, filePath: file, line: line, column: 1)
}

/// Runs every predicate on `value` and reports each failure, so one run shows all that is wrong.
func evaluate<T>(_ value: T, _ predicates: [Predicate<T>], failFunction: AssertionFailure) {
    for predicate in predicates {
        if case .failure(let message, let file, let line) = predicate(value) {
            failFunction(message, file, line)
        }
    }
}
