// What linking netdevd's own JSON coder and option parser costs a process: a command line parsed with CommandOptions
// and a reply encoded with JSONCoding, then the process's memory printed. Its twins replace one or both with the
// libraries (FoundationEssentials' JSONEncoder, swift-argument-parser); `make benchmark-handwritten` compares them.
import HandWrittenOwnOptions
import HandWrittenProbe
import JSONCoding

try runLinks { try JSONTextEncoder().encodeToString($0) }
