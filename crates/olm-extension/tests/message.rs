//! Condition message shaping: network-error sanitising, the terminal-error marker. (Truncation
//! is `olm_k8s::bounded_message`'s, tested there.)

use std::borrow::Cow;

use olm_extension::message::{sanitize_network_error, strip_terminal_prefix};

/// `sanitize_test.go` `TestSanitizeNetworkError` (inputs are the Go errors' `Error()` texts)
/// and the network cases of `common_controller_test.go` `TestSetStatusProgressing`.
#[test]
fn sanitize_network_error_upstream_vectors() {
    let cases = [
        (
            "non-network error returns original message",
            "some random error",
            "some random error",
        ),
        (
            "strips read udp address pattern from DNS inner error",
            "dial tcp: lookup docker-registry.operator-controller.svc on 10.96.0.10:53: read udp 10.244.0.8:46753->10.96.0.10:53: i/o timeout",
            "dial tcp: lookup docker-registry.operator-controller.svc on 10.96.0.10:53: i/o timeout",
        ),
        (
            "strips read udp pattern from wrapped error preserving outer context",
            "source catalog content: error creating image source: dial tcp: lookup docker-registry.operator-controller.svc on 10.96.0.10:53: read udp 10.244.0.8:46753->10.96.0.10:53: i/o timeout",
            "source catalog content: error creating image source: dial tcp: lookup docker-registry.operator-controller.svc on 10.96.0.10:53: i/o timeout",
        ),
        (
            "net.DNSError with IsNotFound unchanged",
            "lookup registry.example.com on 10.96.0.10:53: no such host",
            "lookup registry.example.com on 10.96.0.10:53: no such host",
        ),
        (
            "net.DNSError without server unchanged",
            "lookup registry.example.com: no such host",
            "lookup registry.example.com: no such host",
        ),
        (
            "net.DNSError without read/write pattern unchanged",
            "lookup registry.example.com on 10.96.0.10:53: server misbehaving",
            "lookup registry.example.com on 10.96.0.10:53: server misbehaving",
        ),
        (
            "wrapped net.DNSError without read/write pattern preserves wrapping",
            "source catalog content: lookup registry.example.com on 10.96.0.10:53: server misbehaving",
            "source catalog content: lookup registry.example.com on 10.96.0.10:53: server misbehaving",
        ),
        (
            "net.DNSError with both IsTimeout and IsNotFound unchanged",
            "lookup registry.example.com on 10.96.0.10:53: i/o timeout",
            "lookup registry.example.com on 10.96.0.10:53: i/o timeout",
        ),
        (
            "net.DNSError without server unchanged (timeout)",
            "lookup registry.example.com: i/o timeout",
            "lookup registry.example.com: i/o timeout",
        ),
        (
            "net.OpError dial with source and addr unchanged",
            "dial tcp 10.0.0.1:52341->192.168.1.100:443: connect: connection refused",
            "dial tcp 10.0.0.1:52341->192.168.1.100:443: connect: connection refused",
        ),
        (
            "net.OpError dial without source unchanged",
            "dial tcp 192.168.1.100:443: connect: connection refused",
            "dial tcp 192.168.1.100:443: connect: connection refused",
        ),
        (
            "wrapped net.OpError dial preserves full error string",
            "source catalog content: error creating image source: dial tcp 10.0.0.1:52341->192.168.1.100:443: connect: connection refused",
            "source catalog content: error creating image source: dial tcp 10.0.0.1:52341->192.168.1.100:443: connect: connection refused",
        ),
        (
            "strips read tcp pattern",
            "read tcp 10.0.0.1:52341->192.168.1.100:443: connection reset by peer",
            "connection reset by peer",
        ),
        (
            "strips write tcp pattern",
            "write tcp 10.0.0.1:52341->192.168.1.100:443: broken pipe",
            "broken pipe",
        ),
        (
            "strips read udp pattern with IPv6 addresses",
            "read udp [::1]:52341->[fd00::1]:53: i/o timeout",
            "i/o timeout",
        ),
        (
            "TestSetStatusProgressing: read tcp with source port stripped",
            "source catalog content: read tcp 10.0.0.1:52341->192.168.1.100:443: connect: connection refused",
            "source catalog content: connect: connection refused",
        ),
        (
            "TestSetStatusProgressing: DNS error sanitized",
            "source catalog content: dial tcp: lookup registry.example.com on 10.96.0.10:53: read udp 10.244.0.8:46753->10.96.0.10:53: i/o timeout",
            "source catalog content: dial tcp: lookup registry.example.com on 10.96.0.10:53: i/o timeout",
        ),
    ];
    for (name, input, expected) in cases {
        assert_eq!(sanitize_network_error(input), expected, "{name}");
    }
    assert!(matches!(
        sanitize_network_error("some random error"),
        Cow::Borrowed(_)
    ));
}

/// `sanitize_test.go` `TestSanitizeNetworkErrorConsistency` and
/// `TestSanitizeNetworkErrorDNSConsistency`: only the source port differs, the message does not.
#[test]
fn sanitized_messages_do_not_depend_on_the_source_port() {
    for (prefix, host) in [
        ("", "docker-registry.operator-controller.svc"),
        (
            "source catalog content: error creating image source: ",
            "registry.example.com",
        ),
    ] {
        let make = |port: u16| {
            format!(
                "{prefix}dial tcp: lookup {host} on 10.96.0.10:53: read udp 10.244.0.8:{port}->10.96.0.10:53: i/o timeout"
            )
        };
        let got: Vec<String> = [46753, 51234, 60000]
            .into_iter()
            .map(|p| sanitize_network_error(&make(p)).into_owned())
            .collect();
        assert_eq!(got[0], got[1]);
        assert_eq!(got[1], got[2]);
        assert_eq!(
            got[0],
            format!("{prefix}dial tcp: lookup {host} on 10.96.0.10:53: i/o timeout")
        );
    }
}

/// The pattern's edges: what it requires and what it leaves alone. Expected values were
/// produced by Go's `regexp` `ReplaceAllString` with upstream's pattern.
#[test]
fn sanitize_follows_the_pattern_at_its_edges() {
    let cases = [
        // Several fragments, each removed; matches need no word boundary.
        (
            "a read tcp 1.2.3.4:1->5.6.7.8:2: b; xwrite udp 1.1.1.1->2.2.2.2 c",
            "a b; x c",
        ),
        // Ports are optional on both sides; the trailing ": " too.
        ("read tcp 1.2.3.4->5.6.7.8", ""),
        ("read tcp 1.2.3.4->5.6.7.8:9 tail", " tail"),
        // Octets have one to three digits: a fourth digit in the source fails the match ...
        (
            "read tcp 1234.1.1.1:1->1.1.1.1:1: x",
            "read tcp 1234.1.1.1:1->1.1.1.1:1: x",
        ),
        // ... while in the destination the match simply ends after three.
        ("read tcp 1.1.1.1:1->1.1.1.1234: x", "4: x"),
        // Other protocols, operations and upper case are not matched.
        (
            "read unix 1.2.3.4->5.6.7.8: x",
            "read unix 1.2.3.4->5.6.7.8: x",
        ),
        (
            "READ tcp 1.2.3.4->5.6.7.8: x",
            "READ tcp 1.2.3.4->5.6.7.8: x",
        ),
        // A host name is not an address.
        (
            "read tcp host:1->5.6.7.8:2: x",
            "read tcp host:1->5.6.7.8:2: x",
        ),
        // An empty bracket is not an IPv6 address; a colon without digits is not a port.
        ("read tcp []:1->[::1]:2: x", "read tcp []:1->[::1]:2: x"),
        ("read tcp [::1]:->[::1]:2: x", "read tcp [::1]:->[::1]:2: x"),
        // Non-ASCII text around a fragment survives intact.
        ("é read tcp 1.2.3.4:5->6.7.8.9:10: ü", "é ü"),
        // The trailing ": " is taken whole or not at all.
        ("read tcp 1.2.3.4:5->6.7.8.9:: x", ":: x"),
        ("read tcp 1.2.3.4:5->6.7.8.9:10:: x", ":: x"),
    ];
    for (input, expected) in cases {
        assert_eq!(sanitize_network_error(input), expected, "{input:?}");
    }
}

/// controller-runtime's `TerminalError` text marker is removed once, at the start only
/// (`error/terminal.go` `UnwrapTerminal`).
#[test]
fn strip_terminal_prefix_removes_one_leading_marker() {
    assert_eq!(strip_terminal_prefix("terminal error: boom"), "boom");
    assert_eq!(
        strip_terminal_prefix("terminal error: terminal error: boom"),
        "terminal error: boom"
    );
    assert_eq!(
        strip_terminal_prefix("x: terminal error: boom"),
        "x: terminal error: boom"
    );
    assert_eq!(strip_terminal_prefix("boom"), "boom");
    assert_eq!(strip_terminal_prefix(""), "");
}
