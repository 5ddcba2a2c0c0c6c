//! Certificates for tests: a CA of the test's own and certificates it signs.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};

/// A CA and certificates it signed, as PEM files in one directory.
pub struct Ca {
    dir: PathBuf,
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Ca {
    pub fn new(dir: &Path, name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        let dir = dir.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("ca.pem"), issuer.pem()).unwrap();
        Ca { dir, issuer }
    }

    pub fn ca(&self) -> String {
        self.dir.join("ca.pem").display().to_string()
    }

    /// As [`Ca::issue`], but its validity ended in 2021.
    pub fn issue_expired(&self, cn: &str) -> (String, String) {
        self.issue_with(cn, true)
    }

    /// A certificate for `cn` (and the names `localhost` and 127.0.0.1): its cert and key files.
    pub fn issue(&self, cn: &str) -> (String, String) {
        self.issue_with(cn, false)
    }

    fn issue_with(&self, cn: &str, expired: bool) -> (String, String) {
        let mut params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        if expired {
            params.not_before = rcgen::date_time_ymd(2020, 1, 1);
            params.not_after = rcgen::date_time_ymd(2021, 1, 1);
        }
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let (cert_file, key_file) = (
            self.dir.join(format!("{cn}-{expired}.pem")),
            self.dir.join(format!("{cn}-{expired}-key.pem")),
        );
        std::fs::write(&cert_file, cert.pem()).unwrap();
        std::fs::write(&key_file, key.serialize_pem()).unwrap();
        (
            cert_file.display().to_string(),
            key_file.display().to_string(),
        )
    }
}
