import CCurl
#if canImport(Glibc)
import Glibc
#endif

/// The CA certificates HTTPS requests trust: a bundle file and a hashed certificate directory (either may be
/// absent: libcurl's own default then applies).
///
/// Why this exists: libcurl names the CA bundle of the distribution it was built on. The Python wheel carries
/// Debian's libcurl, compiled to read `/etc/ssl/certs/ca-certificates.crt`; Fedora, RHEL and others keep
/// their bundle elsewhere, and every HTTPS fetch would fail certificate verification there. So the process
/// default is chosen once, in this order:
/// 1. the environment variables `SSL_CERT_FILE` / `SSL_CERT_DIR` (OpenSSL's names for the same thing);
/// 2. libcurl's compiled-in bundle (`CURLINFO_CAINFO`), when that file exists;
/// 3. the first existing file of `wellKnownBundles`.
/// A client's `ca_file` option replaces the bundle file for that client's requests.
public struct CACertificates: Sendable, Equatable {
    /// CURLOPT_CAINFO: a PEM file of trusted certificates; nil keeps libcurl's default.
    public var file: String?
    /// CURLOPT_CAPATH: a directory of certificates named by their hash (`openssl rehash`); nil keeps the default.
    public var directory: String?

    public init(file: String? = nil, directory: String? = nil) {
        self.file = file
        self.directory = directory
    }

    /// Where distributions keep their CA bundle, most common first.
    public static let wellKnownBundles = [
        "/etc/ssl/certs/ca-certificates.crt",                 // Debian, Ubuntu, Arch, Alpine, Gentoo
        "/etc/pki/tls/certs/ca-bundle.crt",                   // Fedora, RHEL, CentOS, Amazon Linux
        "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",  // RHEL 7 and later, the extracted trust store
        "/etc/ssl/ca-bundle.pem",                             // openSUSE, SLES
        "/etc/ssl/cert.pem",                                  // Alpine, Void, OpenBSD, macOS
        "/etc/pki/tls/cacert.pem",                            // OpenELEC
        "/usr/local/share/certs/ca-root-nss.crt",             // FreeBSD
    ]

    /// The choice described on the type, as a function of its inputs alone.
    /// - Parameters:
    ///   - certFile, certDir: the values of SSL_CERT_FILE and SSL_CERT_DIR (nil or empty: unset). A variable
    ///     that is set is used as given, even when nothing is there: the failure then names that path.
    ///   - compiledFile: libcurl's compiled-in bundle, nil when it has none. (Its compiled-in directory may be
    ///     missing too: libcurl with OpenSSL 3 then verifies with the bundle alone, measured here.)
    ///   - exists: whether a regular file (or a link to one) is at a path.
    public static func choose(certFile: String?, certDir: String?, compiledFile: String?,
                              exists: (String) -> Bool) -> CACertificates
    {
        var chosen = CACertificates()
        if let certDir, !certDir.isEmpty { chosen.directory = certDir }
        if let certFile, !certFile.isEmpty {
            chosen.file = certFile
        } else if let compiledFile, exists(compiledFile) {
            chosen.file = nil  // libcurl's default is where it should be
        } else {
            chosen.file = wellKnownBundles.first(where: exists)  // nil: none known here, libcurl's default stands
        }
        return chosen
    }

    /// The process's default, chosen on first use (the environment is read once).
    public static let processDefault: CACertificates = {
        let probe = curl_easy_init()
        defer { if let probe { curl_easy_cleanup(probe) } }
        let compiledFile = probe.flatMap { exp_curl_default_cainfo($0) }.map { String(cString: $0) }
        return choose(certFile: environment("SSL_CERT_FILE"), certDir: environment("SSL_CERT_DIR"),
                      compiledFile: compiledFile, exists: isFile)
    }()

    private static func environment(_ name: String) -> String? {
        guard let value = getenv(name), value.pointee != 0 else { return nil }
        return String(cString: value)
    }

    static func isFile(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }
}
