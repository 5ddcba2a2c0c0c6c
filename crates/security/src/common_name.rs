//! The subject's common name of a certificate, read from its DER by walking just the
//! fields in front of it (TBSCertificate: version, serial, signature algorithm, issuer,
//! validity, subject); no other part of the certificate is read.

/// One DER element: its tag, its contents and what follows it; `None` if malformed.
fn element(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |l, b| (l << 8) | usize::from(*b));
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;
/// `[0]`, the explicit version of a v2 or v3 certificate.
const VERSION: u8 = 0xa0;
/// 2.5.4.3, commonName.
const COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];

/// The first common name in the subject of certificate `der`.
pub fn common_name(der: &[u8]) -> Option<String> {
    let (SEQUENCE, certificate, _) = element(der)? else {
        return None;
    };
    let (SEQUENCE, tbs, _) = element(certificate)? else {
        return None;
    };
    let mut fields = tbs;
    let (tag, _, rest) = element(fields)?;
    if tag == VERSION {
        fields = rest;
    }
    // serial, signature algorithm, issuer, validity: skipped; then the subject.
    for _ in 0..4 {
        fields = element(fields)?.2;
    }
    let (SEQUENCE, mut subject, _) = element(fields)? else {
        return None;
    };
    while !subject.is_empty() {
        let (SET, mut rdn, rest) = element(subject)? else {
            return None;
        };
        subject = rest;
        while !rdn.is_empty() {
            let (SEQUENCE, attribute, rest) = element(rdn)? else {
                return None;
            };
            rdn = rest;
            let (OID, oid, value) = element(attribute)? else {
                return None;
            };
            if oid == COMMON_NAME {
                let (_, text, _) = element(value)?;
                return String::from_utf8(text.to_vec()).ok();
            }
        }
    }
    None
}
