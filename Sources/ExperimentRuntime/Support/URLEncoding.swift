/// `value` with every byte outside RFC 3986's unreserved set (A-Z a-z 0-9 - _ . ~) percent-encoded, for
/// text substituted into a URL template: a "/", "?", "#" or ".." in a datafile id or key stays data and
/// cannot change the path, query or host the request goes to.
func percentEncoded(_ value: String) -> String {
    let hex = Array("0123456789ABCDEF".utf8)
    var bytes: [UInt8] = []
    bytes.reserveCapacity(value.utf8.count)
    for byte in value.utf8 {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
             UInt8(ascii: "~"):
            bytes.append(byte)
        default:
            bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
        }
    }
    return String(decoding: bytes, as: UTF8.self)
}
