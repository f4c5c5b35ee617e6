/// A count and its noun as a person writes them: `1 link`, `2 links`, `0 links`. Every message that counts uses
/// it, so no line says "1 links".
public func quantity(_ count: Int, _ singular: String, plural: String? = nil) -> String {
    "\(count) \(count == 1 ? singular : plural ?? singular + "s")"
}
