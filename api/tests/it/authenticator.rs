//! A software authenticator for the passkey tests: one ES256 credential, 'none' attestation,
//! its bytes laid out as WebAuthn Level 2 lays them out (authenticator data, COSE key, CBOR
//! attestation object, the signature over the authenticator data and the client data's hash).
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
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

fn cbor_bytes(b: &[u8]) -> Vec<u8> {
    let mut v = cbor_head(2, b.len());
    v.extend(b);
    v
}

/// A platform authenticator holding one ES256 credential.
pub struct Authenticator {
    pub key: SigningKey,
    pub id: Vec<u8>,
    pub counter: u32,
    pub rp_id: String,
    pub origin: String,
    /// The user handle it was registered with.
    pub handle: Option<Vec<u8>>,
}

impl Authenticator {
    pub fn new() -> Self {
        Self {
            key: SigningKey::random(&mut p256::elliptic_curve::rand_core::OsRng),
            id: rand_id(),
            counter: 0,
            rp_id: "localhost".into(),
            origin: ORIGIN.into(),
            handle: None,
        }
    }

    fn client_data(&self, kind: &str, challenge: &str) -> Vec<u8> {
        json!({"type": kind, "challenge": challenge, "origin": self.origin, "crossOrigin": false})
            .to_string()
            .into_bytes()
    }

    fn cose_key(&self) -> Vec<u8> {
        let point = self.key.verifying_key().to_encoded_point(false);
        let mut k = vec![0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21];
        k.extend(cbor_bytes(point.x().unwrap()));
        k.push(0x22);
        k.extend(cbor_bytes(point.y().unwrap()));
        k
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
        att.extend(cbor_text("none"));
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
        let sig: Signature = self.key.sign(&signed);
        json!({
            "id": b64(&self.id),
            "rawId": b64(&self.id),
            "type": "public-key",
            "response": {
                "clientDataJSON": b64(&client),
                "authenticatorData": b64(&data),
                "signature": b64(sig.to_der().as_bytes()),
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
