//! Cookie signatures (HMAC-SHA256) and password hashing (argon2id).
//!
//! Hashing is CPU-bound and slow on purpose, so it runs on a few threads of its own (see
//! [`PasswordHasher`]): a burst of sign-ins queues for them and never occupies the async
//! workers that answer `get-session`.
mod password;

pub(crate) use password::lower_this_threads_priority;
pub use password::{HashError, PasswordHasher};

use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Signs cookie values with the server secret.
#[derive(Clone)]
pub struct Signer {
    /// HMAC keyed once (its inner and outer pads hashed): each use clones this state instead
    /// of keying again.
    keyed: HmacSha256,
}

impl Signer {
    pub fn new(secret: &str) -> Self {
        // HMAC takes keys of any length; this cannot fail.
        let keyed = match HmacSha256::new_from_slice(secret.as_bytes()) {
            Ok(m) => m,
            Err(_) => unreachable_hmac(),
        };
        Self { keyed }
    }

    fn mac(&self) -> HmacSha256 {
        self.keyed.clone()
    }

    /// base64 (standard, padded) HMAC-SHA256 of `value`: 44 characters.
    pub fn signature(&self, value: &str) -> String {
        let mut mac = self.mac();
        mac.update(value.as_bytes());
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    }

    /// `value.signature`, as better-auth signs cookies (before URL-encoding).
    pub fn sign(&self, value: &str) -> String {
        format!("{value}.{}", self.signature(value))
    }

    /// The value of a `value.signature` string when the signature is right (compared in
    /// constant time), else `None`.
    pub fn unsign<'a>(&self, signed: &'a str) -> Option<&'a str> {
        let (value, sig) = signed.rsplit_once('.')?;
        if sig.len() != 44 || !sig.ends_with('=') {
            return None;
        }
        let sig = base64::engine::general_purpose::STANDARD.decode(sig).ok()?;
        let mut mac = self.mac();
        mac.update(value.as_bytes());
        mac.verify_slice(&sig).ok().map(|_| value)
    }
}

impl Signer {
    /// A self-contained signed token for `purpose`: `base64url(json).base64url(mac)`. The
    /// purpose is part of what is signed, so a token of one kind never works as another.
    pub fn seal<T: serde::Serialize>(&self, purpose: &str, claims: &T) -> String {
        let b64 = &base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let payload = b64.encode(serde_json::to_vec(claims).unwrap_or_default());
        let mut mac = self.mac();
        mac.update(purpose.as_bytes());
        mac.update(b".");
        mac.update(payload.as_bytes());
        format!("{payload}.{}", b64.encode(mac.finalize().into_bytes()))
    }

    /// The claims of a token sealed for `purpose`, if its signature is right.
    pub fn open<T: serde::de::DeserializeOwned>(&self, purpose: &str, token: &str) -> Option<T> {
        let b64 = &base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let (payload, sig) = token.split_once('.')?;
        let sig = b64.decode(sig).ok()?;
        let mut mac = self.mac();
        mac.update(purpose.as_bytes());
        mac.update(b".");
        mac.update(payload.as_bytes());
        mac.verify_slice(&sig).ok()?;
        serde_json::from_slice(&b64.decode(payload).ok()?).ok()
    }
}

/// Encrypts secrets the server keeps but must read back (XChaCha20-Poly1305 under a key
/// derived from the server secret and a label of their kind): `<prefix><base64url(nonce ‖
/// ciphertext)>`. Cheap to clone.
#[derive(Clone)]
pub struct Sealer {
    cipher: chacha20poly1305::XChaCha20Poly1305,
    prefix: &'static str,
}

impl Sealer {
    pub fn new(secret: &str, label: &str, prefix: &'static str) -> Self {
        use chacha20poly1305::KeyInit;
        // HMAC takes a key of any length: this never falls back.
        let key: [u8; 32] = match <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()) {
            Ok(mut mac) => {
                mac.update(label.as_bytes());
                mac.finalize().into_bytes().into()
            }
            Err(_) => [0; 32],
        };
        Self {
            cipher: chacha20poly1305::XChaCha20Poly1305::new(&key.into()),
            prefix,
        }
    }

    pub fn seal(&self, plain: &str) -> String {
        use chacha20poly1305::aead::Aead;
        let nonce: [u8; 24] = rand::random();
        match self.cipher.encrypt(
            chacha20poly1305::XNonce::from_slice(&nonce),
            plain.as_bytes(),
        ) {
            Ok(ct) => {
                let mut out = nonce.to_vec();
                out.extend_from_slice(&ct);
                format!(
                    "{}{}",
                    self.prefix,
                    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(out)
                )
            }
            // Encryption of a byte string cannot fail; never keep the plain text anyway.
            Err(_) => String::new(),
        }
    }

    /// The plain text, if `sealed` is this sealer's and decrypts.
    pub fn open(&self, sealed: &str) -> Option<String> {
        use chacha20poly1305::aead::Aead;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(sealed.strip_prefix(self.prefix)?)
            .ok()?;
        if bytes.len() < 24 {
            return None;
        }
        let (nonce, ct) = bytes.split_at(24);
        let plain = self
            .cipher
            .decrypt(chacha20poly1305::XNonce::from_slice(nonce), ct)
            .ok()?;
        String::from_utf8(plain).ok()
    }
}

/// Whether `a` and `b` are equal, in time that depends on their length only (which is not
/// secret here: cookies of one server have one shape). Eight bytes a step, where `subtle`'s
/// byte-wise `ct_eq` — an optimization barrier per byte — took ~2 µs for a 1 KB cookie.
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut diff = 0u64;
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        let x = u64::from_ne_bytes(x.try_into().unwrap_or_default());
        let y = u64::from_ne_bytes(y.try_into().unwrap_or_default());
        diff |= x ^ y;
    }
    for (x, y) in ra.iter().zip(rb) {
        diff |= u64::from(x ^ y);
    }
    std::hint::black_box(diff) == 0
}

#[cold]
fn unreachable_hmac() -> HmacSha256 {
    // `new_from_slice` only fails for fixed-size-key MACs, which HMAC is not.
    #[allow(clippy::panic)]
    {
        panic!("HMAC rejected its key")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_bytes_compares_every_byte() {
        let a: Vec<u8> = (0..1031u32).map(|i| (i * 7) as u8).collect();
        assert!(same_bytes(&a, &a.clone()));
        for i in [0, 7, 8, 500, 1023, 1024, 1030] {
            let mut b = a.clone();
            b[i] ^= 1;
            assert!(!same_bytes(&a, &b), "a difference at {i}");
        }
        assert!(!same_bytes(&a, &a[..1030]));
        assert!(same_bytes(b"", b""));
    }

    #[test]
    fn sign_and_unsign() {
        let s = Signer::new("0123456789abcdef0123456789abcdef");
        let signed = s.sign("tok");
        assert_eq!(s.unsign(&signed), Some("tok"));
        assert_eq!(s.unsign("tok"), None);
        assert_eq!(s.unsign(&format!("{signed}x")), None);
        let other = Signer::new("fedcba9876543210fedcba9876543210");
        assert_eq!(other.unsign(&signed), None);
        let tampered = signed.replacen("tok", "tak", 1);
        assert_eq!(s.unsign(&tampered), None);
    }

    #[test]
    fn sealed_tokens_are_bound_to_their_purpose() {
        let s = Signer::new("0123456789abcdef0123456789abcdef");
        let t = s.seal("verify-email", &serde_json::json!({"email": "a@b.co"}));
        let v: serde_json::Value = s.open("verify-email", &t).unwrap();
        assert_eq!(v["email"], "a@b.co");
        assert!(s.open::<serde_json::Value>("delete-account", &t).is_none());
        assert!(s
            .open::<serde_json::Value>("verify-email", &t.replacen('e', "f", 1))
            .is_none());
        assert!(s
            .open::<serde_json::Value>("verify-email", "garbage")
            .is_none());
    }
}
