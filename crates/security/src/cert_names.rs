//! The names in a certificate, read from its DER by walking just the fields in front of them
//! (TBSCertificate: version, serial, signature algorithm, issuer, validity, subject); no other
//! part of the certificate is read.
//!
//! - [`common_name`]: the subject's first common name (`cluster-verify-cn`).
//! - [`subject_and_issuer`]: both names as OpenSSL's `X509_NAME_oneline` writes them
//!   (`/C=SE/O=Acme/CN=client`), which MySQL compares with `REQUIRE SUBJECT` and `ISSUER`.

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
/// The attributes OpenSSL writes with a short name (by their OIDs' DER contents); others
/// are written as dotted OIDs.
const SHORT_NAMES: &[(&[u8], &str)] = &[
    (&[0x55, 0x04, 0x03], "CN"),
    (&[0x55, 0x04, 0x04], "SN"),
    (&[0x55, 0x04, 0x05], "serialNumber"),
    (&[0x55, 0x04, 0x06], "C"),
    (&[0x55, 0x04, 0x07], "L"),
    (&[0x55, 0x04, 0x08], "ST"),
    (&[0x55, 0x04, 0x09], "street"),
    (&[0x55, 0x04, 0x0a], "O"),
    (&[0x55, 0x04, 0x0b], "OU"),
    (&[0x55, 0x04, 0x0c], "title"),
    (&[0x55, 0x04, 0x0d], "description"),
    (&[0x55, 0x04, 0x0f], "businessCategory"),
    (&[0x55, 0x04, 0x10], "postalAddress"),
    (&[0x55, 0x04, 0x11], "postalCode"),
    (&[0x55, 0x04, 0x12], "postOfficeBox"),
    (&[0x55, 0x04, 0x29], "name"),
    (&[0x55, 0x04, 0x2a], "GN"),
    (&[0x55, 0x04, 0x2b], "initials"),
    (&[0x55, 0x04, 0x2c], "generationQualifier"),
    (&[0x55, 0x04, 0x2e], "dnQualifier"),
    (&[0x55, 0x04, 0x41], "pseudonym"),
    (&[0x55, 0x04, 0x61], "organizationIdentifier"),
    (
        &[
            0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x3c, 0x02, 0x01, 0x01,
        ],
        "jurisdictionL",
    ),
    (
        &[
            0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x3c, 0x02, 0x01, 0x02,
        ],
        "jurisdictionST",
    ),
    (
        &[
            0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x3c, 0x02, 0x01, 0x03,
        ],
        "jurisdictionC",
    ),
    (
        &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x01],
        "emailAddress",
    ),
    (
        &[0x09, 0x92, 0x26, 0x89, 0x93, 0xf2, 0x2c, 0x64, 0x01, 0x19],
        "DC",
    ),
    (
        &[0x09, 0x92, 0x26, 0x89, 0x93, 0xf2, 0x2c, 0x64, 0x01, 0x01],
        "UID",
    ),
];

/// One attribute of a name: its OID (DER contents), its value's string tag and bytes.
type Attribute<'a> = (&'a [u8], u8, &'a [u8]);

/// BMPString: two bytes a character.
const BMP_STRING: u8 = 0x1e;
/// UniversalString: four bytes a character.
const UNIVERSAL_STRING: u8 = 0x1c;

/// The issuer's and the subject's attributes of certificate `der`, in order.
fn names(der: &[u8]) -> Option<(Vec<Attribute<'_>>, Vec<Attribute<'_>>)> {
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
    // serial and signature algorithm: skipped; then the issuer, validity and the subject.
    for _ in 0..2 {
        fields = element(fields)?.2;
    }
    let (SEQUENCE, issuer, rest) = element(fields)? else {
        return None;
    };
    let rest = element(rest)?.2;
    let (SEQUENCE, subject, _) = element(rest)? else {
        return None;
    };
    Some((attributes(issuer)?, attributes(subject)?))
}

/// The attributes of a Name (a sequence of sets of type-and-value sequences).
fn attributes(mut name: &[u8]) -> Option<Vec<Attribute<'_>>> {
    let mut out = Vec::new();
    while !name.is_empty() {
        let (SET, mut rdn, rest) = element(name)? else {
            return None;
        };
        name = rest;
        while !rdn.is_empty() {
            let (SEQUENCE, attribute, rest) = element(rdn)? else {
                return None;
            };
            rdn = rest;
            let (OID, oid, value) = element(attribute)? else {
                return None;
            };
            let (tag, text, _) = element(value)?;
            out.push((oid, tag, text));
        }
    }
    Some(out)
}

/// The first common name in the subject of certificate `der`, if it is UTF-8 (or ASCII).
pub fn common_name(der: &[u8]) -> Option<String> {
    let (_, subject) = names(der)?;
    let common_name = SHORT_NAMES[0].0;
    let (_, _, value) = subject
        .into_iter()
        .find(|(oid, _, _)| *oid == common_name)?;
    String::from_utf8(value.to_vec()).ok()
}

/// The subject and the issuer of certificate `der`, each as OpenSSL's one-line form.
pub fn subject_and_issuer(der: &[u8]) -> Option<(String, String)> {
    let (issuer, subject) = names(der)?;
    Some((oneline(&subject), oneline(&issuer)))
}

/// `/C=SE/O=Acme/CN=client`: each attribute by its short name, or its dotted OID, and its
/// value as `X509_NAME_oneline` writes it: a BMPString or UniversalString whose characters
/// are all one byte as those bytes, and every byte outside ' '..='~' as `\xHH`.
fn oneline(attributes: &[Attribute<'_>]) -> String {
    let mut out = String::new();
    for (oid, tag, value) in attributes {
        out.push('/');
        match SHORT_NAMES.iter().find(|(o, _)| o == oid) {
            Some((_, short)) => out.push_str(short),
            None => out.push_str(&dotted(oid)),
        }
        out.push('=');
        let width = match *tag {
            BMP_STRING => 2,
            UNIVERSAL_STRING => 4,
            _ => 1,
        };
        let narrow = value.len() % width == 0
            && value
                .chunks(width)
                .all(|c| c[..width - 1].iter().all(|b| *b == 0));
        let bytes: Vec<u8> = match narrow {
            true => value.chunks(width).map(|c| c[width - 1]).collect(),
            false => value.to_vec(),
        };
        for b in bytes {
            match b {
                b' '..=b'~' => out.push(char::from(b)),
                _ => out.push_str(&format!("\\x{b:02X}")),
            }
        }
    }
    out
}

/// An OID's DER contents as `1.2.840.113549`.
fn dotted(oid: &[u8]) -> String {
    let mut arcs = Vec::new();
    let mut value = 0u64;
    for &b in oid {
        value = (value << 7) | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            if arcs.is_empty() {
                let first = (value / 40).min(2);
                arcs.push(first);
                arcs.push(value - first * 40);
            } else {
                arcs.push(value);
            }
            value = 0;
        }
    }
    arcs.iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(".")
}
