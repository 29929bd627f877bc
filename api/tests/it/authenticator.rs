//! A software authenticator for the passkey tests: one ES256 or Ed25519 credential, 'none'
//! attestation, its bytes laid out as WebAuthn Level 2 lays them out (authenticator data, COSE
//! key, CBOR attestation object, the signature over the authenticator data and the client
//! data's hash).
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use p256::elliptic_curve::rand_core::OsRng;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::common::ORIGIN;

pub fn b64(b: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(b)
}

/// A CBOR byte string's or text string's head.
fn cbor_head(major: u8, len: usize) -> Vec<u8> {
    match len {
        0..=23 => vec![major << 5 | len as u8],
        24..=255 => vec![major << 5 | 24, len as u8],
        _ => {
            let mut v = vec![major << 5 | 25];
            v.extend((len as u16).to_be_bytes());
            v
        }
    }
}

fn cbor_text(s: &str) -> Vec<u8> {
    let mut v = cbor_head(3, s.len());
    v.extend(s.as_bytes());
    v
}

pub fn cbor_bytes(b: &[u8]) -> Vec<u8> {
    let mut v = cbor_head(2, b.len());
    v.extend(b);
    v
}

/// A credential's private key.
pub enum Key {
    Es256(SigningKey),
    Ed25519(ed25519_dalek::SigningKey),
}

/// A platform authenticator holding one credential.
pub struct Authenticator {
    pub key: Key,
    pub id: Vec<u8>,
    pub counter: u32,
    pub rp_id: String,
    pub origin: String,
    /// The user handle it was registered with.
    pub handle: Option<Vec<u8>>,
    /// The attestation format it answers ("none").
    pub fmt: String,
    /// A COSE key to register in place of its own (to test refusals).
    pub cose: Option<Vec<u8>>,
}

impl Authenticator {
    /// With an ES256 key.
    pub fn new() -> Self {
        Self::with(Key::Es256(SigningKey::random(&mut OsRng)))
    }

    /// With an Ed25519 key.
    pub fn ed25519() -> Self {
        Self::with(Key::Ed25519(ed25519_dalek::SigningKey::generate(
            &mut rand::rngs::OsRng,
        )))
    }

    /// Another key of the same kind.
    pub fn like(&self) -> Self {
        match self.key {
            Key::Es256(_) => Self::new(),
            Key::Ed25519(_) => Self::ed25519(),
        }
    }

    fn with(key: Key) -> Self {
        Self {
            key,
            id: rand_id(),
            counter: 0,
            rp_id: "localhost".into(),
            origin: ORIGIN.into(),
            handle: None,
            fmt: "none".into(),
            cose: None,
        }
    }

    fn client_data(&self, kind: &str, challenge: &str) -> Vec<u8> {
        json!({"type": kind, "challenge": challenge, "origin": self.origin, "crossOrigin": false})
            .to_string()
            .into_bytes()
    }

    pub fn cose_key(&self) -> Vec<u8> {
        if let Some(k) = &self.cose {
            return k.clone();
        }
        match &self.key {
            // {1: 2 (EC2), 3: -7 (ES256), -1: 1 (P-256), -2: x, -3: y}
            Key::Es256(key) => {
                let point = key.verifying_key().to_encoded_point(false);
                let mut k = vec![0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21];
                k.extend(cbor_bytes(point.x().unwrap()));
                k.push(0x22);
                k.extend(cbor_bytes(point.y().unwrap()));
                k
            }
            // {1: 1 (OKP), 3: -8 (EdDSA), -1: 6 (Ed25519), -2: x}
            Key::Ed25519(key) => {
                let mut k = vec![0xa4, 0x01, 0x01, 0x03, 0x27, 0x20, 0x06, 0x21];
                k.extend(cbor_bytes(key.verifying_key().as_bytes()));
                k
            }
        }
    }

    fn sign(&self, data: &[u8]) -> Vec<u8> {
        match &self.key {
            Key::Es256(key) => {
                let sig: Signature = key.sign(data);
                sig.to_der().as_bytes().to_vec()
            }
            Key::Ed25519(key) => ed25519_dalek::Signer::sign(key, data).to_bytes().to_vec(),
        }
    }

    fn auth_data(&self, attested: bool) -> Vec<u8> {
        let mut d = Sha256::digest(self.rp_id.as_bytes()).to_vec();
        // User present and verified; attested credential data at registration.
        d.push(if attested { 0x45 } else { 0x05 });
        d.extend(self.counter.to_be_bytes());
        if attested {
            d.extend([0u8; 16]);
            d.extend((self.id.len() as u16).to_be_bytes());
            d.extend(&self.id);
            d.extend(self.cose_key());
        }
        d
    }

    /// The browser's JSON for `navigator.credentials.create` with `options`.
    pub fn register(&mut self, options: &Value) -> Value {
        let challenge = options["challenge"].as_str().unwrap();
        self.handle = Some(
            URL_SAFE_NO_PAD
                .decode(options["user"]["id"].as_str().unwrap())
                .unwrap(),
        );
        let mut att = vec![0xa3];
        att.extend(cbor_text("fmt"));
        att.extend(cbor_text(&self.fmt));
        att.extend(cbor_text("attStmt"));
        att.push(0xa0);
        att.extend(cbor_text("authData"));
        att.extend(cbor_bytes(&self.auth_data(true)));
        json!({
            "id": b64(&self.id),
            "rawId": b64(&self.id),
            "type": "public-key",
            "response": {
                "clientDataJSON": b64(&self.client_data("webauthn.create", challenge)),
                "attestationObject": b64(&att),
                "transports": ["internal", "hybrid"],
            },
            "clientExtensionResults": {},
            "authenticatorAttachment": "platform",
        })
    }

    /// The browser's JSON for `navigator.credentials.get` with `options` (the counter moves).
    pub fn assert(&mut self, options: &Value) -> Value {
        self.counter += 1;
        let challenge = options["challenge"].as_str().unwrap();
        let data = self.auth_data(false);
        let client = self.client_data("webauthn.get", challenge);
        let mut signed = data.clone();
        signed.extend(Sha256::digest(&client));
        let sig = self.sign(&signed);
        json!({
            "id": b64(&self.id),
            "rawId": b64(&self.id),
            "type": "public-key",
            "response": {
                "clientDataJSON": b64(&client),
                "authenticatorData": b64(&data),
                "signature": b64(&sig),
                "userHandle": self.handle.as_deref().map(b64),
            },
            "clientExtensionResults": {},
        })
    }
}

pub fn rand_id() -> Vec<u8> {
    use rand::RngCore;
    let mut id = vec![0u8; 16];
    rand::thread_rng().fill_bytes(&mut id);
    id
}
