"""TLS messages for tests, built by hand: ClientHellos edited from a real one (Python's ssl
module), records, and a server's ServerHello or HelloRetryRequest.  Standard library only."""
import ssl


def real_client_hello(server_name="tls.test"):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname=server_name)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def _u16(n):
    return n.to_bytes(2, "big")


def _u24(n):
    return n.to_bytes(3, "big")


def split_hello(record):
    """(fixed part of the ClientHello body up to the extensions, [(type, data)])."""
    if record[0] != 0x16:
        raise ValueError("generated ClientHello is not a handshake record")
    hs = record[5:5 + int.from_bytes(record[3:5], "big")]
    if hs[0] != 1:
        raise ValueError("generated handshake is not a ClientHello")
    body = hs[4:4 + int.from_bytes(hs[1:4], "big")]
    p = 2 + 32
    p += 1 + body[p]
    p += 2 + int.from_bytes(body[p:p + 2], "big")
    p += 1 + body[p]
    fixed = body[:p]
    end = p + 2 + int.from_bytes(body[p:p + 2], "big")
    p += 2
    exts = []
    while p < end:
        t = int.from_bytes(body[p:p + 2], "big")
        n = int.from_bytes(body[p + 2:p + 4], "big")
        exts.append((t, body[p + 4:p + 4 + n]))
        p += 4 + n
    return fixed, exts


def sni_ext(names):
    """The server_name extension's data for [(name_type, name_bytes)]."""
    entries = b"".join(bytes([t]) + _u16(len(n)) + n for t, n in names)
    return _u16(len(entries)) + entries


def hello_msg(names=((0, b"tls.test"),), hs_type=1, sni_data=None, ext_len_delta=0,
              second_sni=None, pad=0):
    """A ClientHello handshake message (no record header).  names None: no SNI extension;
    sni_data: the raw extension data instead of one built from names; ext_len_delta: added to
    the extensions block's length field (a lie about the length); second_sni: names for a
    second server_name extension right after the first; pad: bytes of a padding extension
    (RFC 7685) put first."""
    fixed, exts = split_hello(real_client_hello("tls.test"))
    out = []
    if pad:
        out.append(_u16(21) + _u16(pad) + b"\0" * pad)
    for t, d in exts:
        if t == 21:
            continue
        if t == 0:
            if names is None and sni_data is None:
                continue
            d = sni_data if sni_data is not None else sni_ext(names)
            if second_sni is not None:
                d2 = sni_ext(second_sni)
                out.append(_u16(t) + _u16(len(d)) + d)
                t, d = 0, d2
        out.append(_u16(t) + _u16(len(d)) + d)
    blob = b"".join(out)
    body = fixed + _u16(len(blob) + ext_len_delta) + blob
    return bytes([hs_type]) + _u24(len(body)) + body


def records(msg, cuts=(), ctype=0x16):
    """msg wrapped in TLS records, cut at the given offsets of msg."""
    pieces, last = [], 0
    for c in list(cuts) + [len(msg)]:
        pieces.append(msg[last:c])
        last = c
    return b"".join(bytes([ctype, 3, 1]) + _u16(len(p)) + p for p in pieces)


def hello(names=((0, b"tls.test"),), **kw):
    return records(hello_msg(names, **kw))


# The random of a ServerHello that is a HelloRetryRequest (RFC 8446 4.1.3): SHA-256 of
# "HelloRetryRequest".
HRR_RANDOM = bytes.fromhex("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c")


def server_hello(hrr=False, version=0x0303):
    """A ServerHello handshake record (a HelloRetryRequest when hrr), with a TLS 1.3
    supported_versions extension; enough for a reader that looks at its type and random."""
    random = HRR_RANDOM if hrr else bytes(range(32))
    exts = _u16(43) + _u16(2) + _u16(0x0304)
    body = _u16(version) + random + b"\x00" + _u16(0x1301) + b"\x00" + _u16(len(exts)) + exts
    msg = b"\x02" + _u24(len(body)) + body
    return records(msg)


def change_cipher_spec():
    """The middlebox-compatibility ChangeCipherSpec record."""
    return bytes([0x14, 3, 3, 0, 1, 1])
