// LinkedOwn with swift-argument-parser in place of CommandOptions (the JSON coder still JSONCoding).
import HandWrittenParserOptions
import HandWrittenProbe
import JSONCoding

try runLinks { try JSONTextEncoder().encodeToString($0) }
