// Journal: every journal entry netdevd writes. `JournalSink` is the way in (the level applied once to the
// daemon's own messages; the session applies it to its entries), `JournalQueue` the writer thread that keeps a
// blocked journald off the loop, `JournalFieldNames` the normalised field names and MESSAGE_IDs.
