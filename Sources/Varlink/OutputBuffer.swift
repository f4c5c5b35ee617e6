/// The replies a connection has yet to write: appended at the end, written from the front. What was written is
/// dropped by moving a start index, not by moving what is left to the front: a 12 MB reply (the metrics text at
/// 20,000 links) goes out about 200 KB per `send`, and shifting the rest after each one moved 360 MB. The storage is
/// compacted once the written part is half of it, and let go when everything is written, so a connection that once
/// sent a large reply does not hold its size for as long as it stays open.
struct OutputBuffer {
    private var bytes: [UInt8] = []
    private var start = 0
    /// The last byte written ended a message (Varlink ends each with a NUL), or nothing was written yet.
    private var atMessageBoundary = true

    /// The bytes not yet written.
    var count: Int { bytes.count - start }

    /// Whether everything appended has been written.
    var isEmpty: Bool { start == bytes.count }

    /// Appends `more`. Into an empty buffer, `more` is taken as it is, without a copy.
    mutating func append(_ more: [UInt8]) {
        if isEmpty {
            bytes = more
            start = 0
        } else {
            bytes += more
        }
    }

    /// Calls `write` with the bytes not yet written, and drops the number it returns (nothing when it returns 0 or
    /// less: an error, left to the caller). Returns what `write` returned.
    mutating func write(_ write: (UnsafeRawBufferPointer) -> Int) -> Int {
        let written = bytes.withUnsafeBytes { write(UnsafeRawBufferPointer(rebasing: $0[start...])) }
        guard written > 0 else { return written }
        start += min(written, count)
        atMessageBoundary = bytes[start - 1] == 0
        if isEmpty {
            bytes = []
            start = 0
        } else if start >= bytes.count / 2 {
            bytes.removeFirst(start)
            start = 0
        }
        return written
    }

    /// Drops every message not begun: what is left is the rest of the one partly written, if any, so the peer still
    /// reads whole messages. The storage is let go, or replaced by that rest's size.
    mutating func dropUnbegunMessages() {
        guard !atMessageBoundary, let end = bytes[start...].firstIndex(of: 0) else {
            bytes = []
            start = 0
            return
        }
        bytes = Array(bytes[start...end])
        start = 0
    }
}
