// LinkedOwn with FoundationEssentials' JSONEncoder in place of JSONCoding (the option parser still CommandOptions).
import FoundationEssentials
import HandWrittenOwnOptions
import HandWrittenProbe

try runLinks { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
