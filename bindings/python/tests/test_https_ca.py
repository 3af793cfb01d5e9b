"""Which CA certificates HTTPS requests trust (Sources/ExperimentRuntime/Network/CACertificates.swift).

A real HTTPS server on 127.0.0.1 serves the demo datafile with a certificate this module makes with
`openssl` (trusted by nothing on the system). A client started by sdk_key must fetch it when the certificate
is trusted through the client option `ca_file`, the environment's SSL_CERT_FILE or SSL_CERT_DIR, or, with
libcurl's compiled-in bundle missing (Fedora, RHEL and others keep theirs elsewhere than the Debian libcurl
the wheel bundles expects), through the search of the usual places, proven in a private mount namespace
whose /etc/ssl holds only cert.pem. Each trust path has its control: without it the fetch fails
verification. The environment is read once per process, so those cases run in a child process.
"""
from __future__ import annotations

import http.server
import json
import os
import shutil
import ssl
import subprocess
import sys
import threading
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

import experiment

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")

SDK_KEY = "tls-demo"

# The child: starts a client by sdk_key against the server and prints what became of the fetch.
CHILD = r"""
import json, sys
import experiment
url, state_dir, extra = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
client = experiment.Client(sdk_key=%r, datafile_url_template=url, state_dir=state_dir, retry_count=0,
                           request_timeout_ms=5000, **extra)
ready = client.wait_ready(15)
status = client.datafile_status()
decided = client.decide("user-1", "free_shipping").flag_key if ready else None
client.close()
print(json.dumps({"ready": ready, "source": status.get("source"), "last_error": status.get("last_error"),
                  "decided": decided}))
""" % SDK_KEY


def _openssl(*args: str) -> str:
    return subprocess.run(["openssl", *args], check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True).stdout


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: Any) -> Dict[str, str]:
    """A self-signed certificate for 127.0.0.1, its key, and a hashed directory holding it (SSL_CERT_DIR)."""
    directory = tmp_path_factory.mktemp("tls")
    cert, key = str(directory / "server.pem"), str(directory / "server.key")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
             "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert)
    hashed = directory / "hashed"
    hashed.mkdir()
    name = _openssl("x509", "-hash", "-noout", "-in", cert).strip() + ".0"
    shutil.copyfile(cert, str(hashed / name))
    return {"cert": cert, "key": key, "hashed_dir": str(hashed)}


class _Datafiles(http.server.BaseHTTPRequestHandler):
    body = b""
    requests: List[str] = []

    def do_GET(self) -> None:
        _Datafiles.requests.append(self.path)
        if self.path != "/datafiles/%s.json" % SDK_KEY:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server(certificate: Dict[str, str]) -> Iterator[str]:
    """The datafile URL template of an HTTPS server on 127.0.0.1 serving the demo datafile."""
    _Datafiles.body = experiment.demo_datafile().encode()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Datafiles)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate["cert"], certificate["key"])
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield "https://127.0.0.1:%d/datafiles/{sdk_key}.json" % httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()


def _fetch_here(url: str, state_dir: str, **extra: Any) -> Tuple[bool, Dict[str, Any]]:
    client = experiment.Client(sdk_key=SDK_KEY, datafile_url_template=url, state_dir=state_dir, retry_count=0,
                               request_timeout_ms=5000, **extra)
    try:
        ready = client.wait_ready(15)
        if ready:
            assert client.decide("user-1", "free_shipping").flag_key == "free_shipping"
        return ready, client.datafile_status()
    finally:
        client.close()


def _fetch_in_child(url: str, state_dir: str, env: Dict[str, Optional[str]], extra: Optional[Dict[str, Any]] = None,
                    wrapper: Optional[List[str]] = None) -> Dict[str, Any]:
    environment = dict(os.environ)
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR"):
        environment.pop(name, None)
    for name, value in env.items():
        if value is None:
            environment.pop(name, None)
        else:
            environment[name] = value
    command = [sys.executable, "-c", CHILD, url, state_dir, json.dumps(extra or {})]
    done = subprocess.run((wrapper or []) + command, env=environment, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    result: Dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _is_verification_failure(message: Optional[str]) -> bool:
    return bool(message) and any(word in str(message).lower() for word in ("certificate", "ssl", "tls"))


def test_untrusted_certificate_fails_verification(server: str, tmp_path: Any) -> None:
    ready, status = _fetch_here(server, str(tmp_path))
    assert not ready
    assert _is_verification_failure(status.get("last_error")), status


def test_ca_file_option_trusts_the_server(server: str, certificate: Dict[str, str], tmp_path: Any) -> None:
    ready, status = _fetch_here(server, str(tmp_path), ca_file=certificate["cert"])
    assert ready, status
    assert status["source"] == "fetch", status


def test_ca_file_option_naming_a_missing_file_fails_clearly(server: str, tmp_path: Any) -> None:
    ready, status = _fetch_here(server, str(tmp_path), ca_file=str(tmp_path / "no-such-bundle.pem"))
    assert not ready
    assert status.get("last_error"), status


@pytest.mark.parametrize("value", ["", 7, "a\nb"])
def test_ca_file_option_refuses_what_is_no_path(value: Any, tmp_path: Any) -> None:
    with pytest.raises(experiment.InvalidOptionError, match="ca_file"):
        experiment.Client(ca_file=value, state_dir=str(tmp_path))


def test_ssl_cert_file_trusts_the_server(server: str, certificate: Dict[str, str], tmp_path: Any) -> None:
    trusted = _fetch_in_child(server, str(tmp_path / "a"), {"SSL_CERT_FILE": certificate["cert"]})
    assert trusted["ready"] and trusted["source"] == "fetch" and trusted["decided"] == "free_shipping", trusted
    control = _fetch_in_child(server, str(tmp_path / "b"), {})
    assert not control["ready"] and _is_verification_failure(control["last_error"]), control


def test_ssl_cert_dir_trusts_the_server(server: str, certificate: Dict[str, str], tmp_path: Any) -> None:
    trusted = _fetch_in_child(server, str(tmp_path / "a"), {"SSL_CERT_DIR": certificate["hashed_dir"]})
    assert trusted["ready"] and trusted["source"] == "fetch", trusted


def test_ca_file_option_wins_over_ssl_cert_file(server: str, certificate: Dict[str, str], tmp_path: Any) -> None:
    # SSL_CERT_FILE names a bundle without the server's certificate; the option names the right one.
    wrong = tmp_path / "other.pem"
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=other",
             "-keyout", str(tmp_path / "other.key"), "-out", str(wrong))
    result = _fetch_in_child(server, str(tmp_path / "a"), {"SSL_CERT_FILE": str(wrong)},
                             extra={"ca_file": certificate["cert"]})
    assert result["ready"], result
    control = _fetch_in_child(server, str(tmp_path / "b"), {"SSL_CERT_FILE": str(wrong)})
    assert not control["ready"] and _is_verification_failure(control["last_error"]), control


def _can_unshare() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-m", "--propagation", "private", "true"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


# In a private mount namespace: an empty tmpfs over /etc/ssl (libcurl's compiled-in bundle and directory are
# gone, as on a system that keeps them elsewhere) and over /etc/pki when it exists; then the certificate, if
# given, at /etc/ssl/cert.pem, one of the usual places. Nothing outside the namespace changes.
HIDE_DEFAULTS = r"""
set -eu
mount -t tmpfs tmpfs /etc/ssl
if [ -d /etc/pki ]; then mount -t tmpfs tmpfs /etc/pki; fi
if [ -n "$PLACED_CERT" ]; then cp "$PLACED_CERT" /etc/ssl/cert.pem; fi
exec "$@"
"""


@pytest.mark.skipif(not _can_unshare(), reason="needs a private mount namespace (unshare -m: root or CAP_SYS_ADMIN)")
def test_missing_compiled_bundle_falls_back_to_the_usual_places(server: str, certificate: Dict[str, str],
                                                                tmp_path: Any) -> None:
    wrapper = ["unshare", "-m", "--propagation", "private", "sh", "-c", HIDE_DEFAULTS, "hide-defaults"]
    found = _fetch_in_child(server, str(tmp_path / "a"), {"PLACED_CERT": certificate["cert"]}, wrapper=wrapper)
    assert found["ready"] and found["source"] == "fetch" and found["decided"] == "free_shipping", found
    # Control: the same namespace without cert.pem: nothing trusts the server.
    control = _fetch_in_child(server, str(tmp_path / "b"), {"PLACED_CERT": ""}, wrapper=wrapper)
    assert not control["ready"] and _is_verification_failure(control["last_error"]), control
