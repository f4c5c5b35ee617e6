// LinkedOwn with both libraries: swift-argument-parser for the command line, FoundationEssentials' JSONEncoder for
// the reply.
import FoundationEssentials
import HandWrittenParserOptions
import HandWrittenProbe

try runLinks { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
