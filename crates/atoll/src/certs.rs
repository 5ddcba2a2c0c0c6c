//! Certificates for `atoll playground --tls`: a CA of its own, and certificates it signs for
//! the nodes (for `localhost` and 127.0.0.1) and for a client, as PEM files in
//! `<data-dir>/tls/`. A second start finds them and makes none.

use std::path::{Path, PathBuf};

use anyhow::Context;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};

/// The files of a playground's certificates.
pub struct Files {
    pub ca: PathBuf,
    pub node_cert: PathBuf,
    pub node_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

/// The certificates in `dir`, made there first if any is missing.
pub fn ensure(dir: &Path) -> anyhow::Result<Files> {
    let files = Files {
        ca: dir.join("ca.pem"),
        node_cert: dir.join("node.pem"),
        node_key: dir.join("node-key.pem"),
        client_cert: dir.join("client.pem"),
        client_key: dir.join("client-key.pem"),
    };
    let all = [
        &files.ca,
        &files.node_cert,
        &files.node_key,
        &files.client_cert,
        &files.client_key,
    ];
    if all.iter().all(|f| f.exists()) {
        return Ok(files);
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "Atoll playground CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate()?)?;
    write(&files.ca, &ca.pem())?;
    for (cn, cert_file, key_file) in [
        ("atoll-node", &files.node_cert, &files.node_key),
        ("atoll-client", &files.client_cert, &files.client_key),
    ] {
        let mut params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])?;
        params.distinguished_name.push(DnType::CommonName, cn);
        let key = KeyPair::generate()?;
        write(cert_file, &params.signed_by(&key, &ca)?.pem())?;
        write(key_file, &key.serialize_pem())?;
    }
    Ok(files)
}

fn write(path: &Path, pem: &str) -> anyhow::Result<()> {
    std::fs::write(path, pem).with_context(|| format!("cannot write {}", path.display()))
}
