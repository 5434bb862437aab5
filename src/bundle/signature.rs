//! Signed bundles: a minisign signature of the bundle file beside it
//! (`<bundle>.minisig`), so `minisign -Vm campaign.anvil -p key.pub` checks
//! it too. The trusted comment names the bundle's digest and campaign, so a
//! signature cannot be moved to another bundle unnoticed.

use std::fs::File;
use std::path::{Path, PathBuf};

use minisign::{KeyPair, PublicKey, PublicKeyBox, SecretKey, SecretKeyBox, SignatureBox};

#[derive(Debug, thiserror::Error)]
pub enum SignError {
    #[error("{what} {}: {why}", path.display())]
    Key { what: &'static str, path: PathBuf, why: String },
    #[error("signature: {0}")]
    Signature(String),
}

/// What a signature says once checked.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Signer {
    /// The key id, as minisign prints it.
    pub key_id: String,
    pub trusted_comment: String,
    /// Whether it was checked against a public key (false: only read).
    pub checked: bool,
}

pub fn signature_path(bundle: &Path) -> PathBuf {
    let mut name = bundle.as_os_str().to_owned();
    name.push(".minisig");
    PathBuf::from(name)
}

/// A new unencrypted key pair at `secret` and `secret.pub` (for CI and
/// tests; `minisign -G` makes password-protected ones, which `sign` reads
/// with a password).
pub fn keygen(secret: &Path) -> Result<String, SignError> {
    let key_error = |why: String| SignError::Key { what: "writing", path: secret.to_path_buf(), why };
    let KeyPair { pk, sk } = KeyPair::generate_unencrypted_keypair().map_err(|e| key_error(e.to_string()))?;
    let sk_box = sk.to_box(Some("anvil bundle signing key")).map_err(|e| key_error(e.to_string()))?;
    let pk_box = pk.to_box().map_err(|e| key_error(e.to_string()))?;
    std::fs::write(secret, sk_box.to_string()).map_err(|e| key_error(e.to_string()))?;
    std::fs::write(public_of(secret), pk_box.to_string()).map_err(|e| key_error(e.to_string()))?;
    Ok(key_id(pk.keynum()))
}

fn public_of(secret: &Path) -> PathBuf {
    let mut name = secret.as_os_str().to_owned();
    name.push(".pub");
    PathBuf::from(name)
}

/// Sign `bundle` with the secret key at `key` (its password, if any, in `password`).
pub fn sign(bundle: &Path, key: &Path, password: Option<String>, comment: &str) -> Result<Signer, SignError> {
    let key_error =
        |why: String| SignError::Key { what: "reading the secret key", path: key.to_path_buf(), why };
    let text = std::fs::read_to_string(key).map_err(|e| key_error(e.to_string()))?;
    let sk_box = SecretKeyBox::from_string(&text).map_err(|e| key_error(e.to_string()))?;
    let sk: SecretKey = match password {
        Some(password) => sk_box.into_secret_key(Some(password)),
        None => sk_box.into_unencrypted_secret_key(),
    }
    .map_err(|e| key_error(e.to_string()))?;
    let data = File::open(bundle).map_err(|e| SignError::Signature(format!("{}: {e}", bundle.display())))?;
    let signature = minisign::sign(None, &sk, data, Some(comment), Some("signature of an anvil bundle"))
        .map_err(|e| SignError::Signature(e.to_string()))?;
    std::fs::write(signature_path(bundle), signature.to_string())
        .map_err(|e| SignError::Signature(format!("writing the signature: {e}")))?;
    Ok(Signer { key_id: key_id(sk.keynum()), trusted_comment: comment.to_string(), checked: false })
}

/// Read `<bundle>.minisig` (None when there is none) and, given a public
/// key, check it: a bad signature is an error.
pub fn check(bundle: &Path, public_key: Option<&Path>) -> Result<Option<Signer>, SignError> {
    let path = signature_path(bundle);
    if !path.is_file() {
        return match public_key {
            Some(_) => Err(SignError::Signature(format!(
                "{} is not signed (no {})",
                bundle.display(),
                path.display()
            ))),
            None => Ok(None),
        };
    }
    let signature = SignatureBox::from_file(&path)
        .map_err(|e| SignError::Signature(format!("{}: {e}", path.display())))?;
    let trusted_comment = signature.trusted_comment().map_err(|e| SignError::Signature(e.to_string()))?;
    let mut signer = Signer { key_id: key_id(signature.keynum()), trusted_comment, checked: false };
    if let Some(public_key) = public_key {
        let key_error = |why: String| SignError::Key {
            what: "reading the public key",
            path: public_key.to_path_buf(),
            why,
        };
        let text = std::fs::read_to_string(public_key).map_err(|e| key_error(e.to_string()))?;
        let pk: PublicKey = PublicKeyBox::from_string(&text)
            .and_then(PublicKeyBox::into_public_key)
            .map_err(|e| key_error(e.to_string()))?;
        let data =
            File::open(bundle).map_err(|e| SignError::Signature(format!("{}: {e}", bundle.display())))?;
        minisign::verify(&pk, &signature, data, true, false, false)
            .map_err(|e| SignError::Signature(format!("does not verify: {e}")))?;
        signer.checked = true;
    }
    Ok(Some(signer))
}

/// minisign's key id: the key number as 16 hex digits, little-endian.
fn key_id(keynum: &[u8]) -> String {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&keynum[..8.min(keynum.len())]);
    format!("{:016X}", u64::from_le_bytes(bytes))
}
