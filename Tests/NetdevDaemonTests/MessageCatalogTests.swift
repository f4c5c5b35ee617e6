import NetdevSession
import Systemd
import Testing

@testable import NetdevDaemon

@Suite("Message catalog")
struct MessageCatalogTests {
    @Test("every kind of entry has a valid MESSAGE_ID of its own, so journalctl MESSAGE_ID= finds exactly its entries")
    func messageIDs() {
        let names = JournalFieldNames()
        let ids = MessageKind.allCases.map { names.messageID($0.id) }
        #expect(ids.allSatisfy { $0 != nil }, "\(zip(MessageKind.allCases, ids).filter { $0.1 == nil }.map(\.0))")
        #expect(Set(ids.compactMap { $0?.hex }).count == MessageKind.allCases.count)
    }
}
