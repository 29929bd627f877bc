//! Ed25519 passkeys (COSE algorithm -8, the first one 1.7 offers). webauthn-rs-core 0.6 parses
//! their keys but cannot check them, so both ceremonies of such a passkey are checked here,
//! step by step as WebAuthn Level 2 (§7.1, §7.2) lists them and as the library checks the
//! others: the client data (type, challenge, origin, not cross-origin), the authenticator data
//! (RP id hash, user present, backup flags), then the key or the signature, then the counter.
//! Errors are the library's, so callers map both paths to the same refusals.
use ed25519_dalek::{Signature, VerifyingKey};
use serde::Deserialize;
use serde_cbor_2::Value;
use sha2::{Digest, Sha256};
use url::Url;
use webauthn_rs_core::error::WebauthnError;
use webauthn_rs_core::proto::{
    AttestationFormat, COSEAlgorithm, COSEKey, COSEKeyType, COSEOKPKey, CollectedClientData,
    Credential, EDDSACurve, ParsedAttestation, PublicKeyCredential, RegisterPublicKeyCredential,
    RegisteredExtensions, UserVerificationPolicy,
};
use webauthn_rs_proto::origin::origins_match;

const USER_PRESENT: u8 = 0x01;
const USER_VERIFIED: u8 = 0x04;
const BACKUP_ELIGIBLE: u8 = 0x08;
const BACKED_UP: u8 = 0x10;
const ATTESTED: u8 = 0x40;

/// What a ceremony's answer is checked against.
pub struct Expected<'a> {
    pub challenge: &'a [u8],
    pub rp_id_hash: &'a [u8; 32],
    pub origins: &'a [Url],
}

/// An assertion's outcome: what the stored passkey becomes.
pub struct Used {
    pub counter: u32,
    pub backup_eligible: bool,
    pub backup_state: bool,
}

/// The authenticator data's fields (WebAuthn §6.1).
pub struct AuthData<'a> {
    rp_id_hash: &'a [u8],
    flags: u8,
    counter: u32,
    /// At registration: the attested credential data.
    pub attested: Option<Attested<'a>>,
}

/// The attested credential data (§6.5.1): the AAGUID, the credential id, its COSE key.
pub struct Attested<'a> {
    pub aaguid: &'a [u8],
    pub id: &'a [u8],
    pub key: &'a [u8],
}

impl<'a> AuthData<'a> {
    /// Its fields, or `None` when the bytes are not authenticator data.
    pub fn parse(b: &'a [u8]) -> Option<Self> {
        let flags = *b.get(32)?;
        let counter = u32::from_be_bytes(b.get(33..37)?.try_into().ok()?);
        let attested = match flags & ATTESTED {
            0 => None,
            _ => {
                let len = u16::from_be_bytes([*b.get(53)?, *b.get(54)?]) as usize;
                let rest = b.get(55 + len..)?;
                let mut de = serde_cbor_2::Deserializer::from_slice(rest);
                serde::de::IgnoredAny::deserialize(&mut de).ok()?;
                Some(Attested {
                    aaguid: b.get(37..53)?,
                    id: b.get(55..55 + len)?,
                    key: rest.get(..de.byte_offset())?,
                })
            }
        };
        Some(Self {
            rp_id_hash: b.get(..32)?,
            flags,
            counter,
            attested,
        })
    }

    fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// An attestation object's format and authenticator data.
pub fn attestation_object(bytes: &[u8]) -> Option<(String, Vec<u8>)> {
    let Value::Map(m) = serde_cbor_2::from_slice::<Value>(bytes).ok()? else {
        return None;
    };
    let (mut fmt, mut auth) = (None, None);
    for (k, v) in m {
        match (k, v) {
            (Value::Text(k), Value::Text(v)) if k == "fmt" => fmt = Some(v),
            (Value::Text(k), Value::Bytes(v)) if k == "authData" => auth = Some(v),
            _ => {}
        }
    }
    Some((fmt?, auth?))
}

/// Whether a COSE key's bytes name EdDSA (the answers this module checks).
pub fn is_eddsa(cose_key: &[u8]) -> bool {
    matches!(
        serde_cbor_2::from_slice::<Value>(cose_key),
        Ok(Value::Map(m)) if m.get(&Value::Integer(3)) == Some(&Value::Integer(-8))
    )
}

/// Whether a stored credential is one this module checks.
pub fn is_ed25519(cred: &Credential) -> bool {
    matches!(cred.cred.key, COSEKeyType::EC_OKP(_))
}

/// Checks a registration of an EdDSA key: the credential to store.
pub fn register(
    reg: &RegisterPublicKeyCredential,
    expected: &Expected,
    exclude: &[Vec<u8>],
) -> Result<Credential, WebauthnError> {
    client_data(&reg.response.client_data_json, "webauthn.create", expected)?;
    let (fmt, bytes) = attestation_object(&reg.response.attestation_object)
        .ok_or(WebauthnError::ParseNOMFailure)?;
    // The options ask for no attestation; browsers then answer "none".
    if fmt != "none" {
        return Err(WebauthnError::AttestationNotSupported);
    }
    let auth = AuthData::parse(&bytes).ok_or(WebauthnError::ParseNOMFailure)?;
    authenticator_data(&auth, expected)?;
    let attested = auth
        .attested
        .as_ref()
        .ok_or(WebauthnError::MissingAttestationCredentialData)?;
    if attested.id != reg.raw_id.as_slice() {
        return Err(WebauthnError::CredentialNotFound);
    }
    let x = ed25519_key(attested.key)?;
    if exclude.iter().any(|id| id.as_slice() == attested.id) {
        return Err(WebauthnError::CredentialAlteredAlgFromRequest);
    }
    Ok(Credential {
        cred_id: attested.id.to_vec(),
        cred: COSEKey {
            type_: COSEAlgorithm::EDDSA,
            key: COSEKeyType::EC_OKP(COSEOKPKey {
                curve: EDDSACurve::ED25519,
                x: x.to_vec(),
            }),
        },
        counter: auth.counter,
        transports: reg.response.transports.clone(),
        user_verified: auth.has(USER_VERIFIED),
        backup_eligible: auth.has(BACKUP_ELIGIBLE),
        backup_state: auth.has(BACKED_UP),
        registration_policy: UserVerificationPolicy::Preferred,
        extensions: RegisteredExtensions::default(),
        attestation: ParsedAttestation::default(),
        attestation_format: AttestationFormat::None,
    })
}

/// Checks an assertion made with the stored Ed25519 credential `cred`.
pub fn assert(
    rsp: &PublicKeyCredential,
    expected: &Expected,
    cred: &Credential,
) -> Result<Used, WebauthnError> {
    if cred.cred_id.as_slice() != rsp.raw_id.as_slice() {
        return Err(WebauthnError::CredentialNotFound);
    }
    let r = &rsp.response;
    client_data(&r.client_data_json, "webauthn.get", expected)?;
    let auth = AuthData::parse(&r.authenticator_data).ok_or(WebauthnError::ParseNOMFailure)?;
    authenticator_data(&auth, expected)?;
    // Verified at registration: the user was told a PIN or a touch of the sensor guards it.
    if cred.user_verified && !auth.has(USER_VERIFIED) {
        return Err(WebauthnError::UserNotVerified);
    }
    if cred.backup_eligible != auth.has(BACKUP_ELIGIBLE) {
        return Err(WebauthnError::CredentialBackupEligibilityInconsistent);
    }
    let COSEKeyType::EC_OKP(key) = &cred.cred.key else {
        return Err(WebauthnError::COSEKeyInvalidType);
    };
    let key = key
        .x
        .as_slice()
        .try_into()
        .ok()
        .and_then(|x| VerifyingKey::from_bytes(x).ok())
        .ok_or(WebauthnError::COSEKeyInvalidType)?;
    let signature =
        Signature::from_slice(&r.signature).map_err(|_| WebauthnError::SignatureInvalid)?;
    let mut signed = r.authenticator_data.to_vec();
    signed.extend(Sha256::digest(&r.client_data_json[..]));
    key.verify_strict(&signed, &signature)
        .map_err(|_| WebauthnError::AuthenticationFailure)?;
    // A counter that does not move forward: two copies of the key (§6.1.1).
    if (auth.counter > 0 || cred.counter > 0) && auth.counter <= cred.counter {
        return Err(WebauthnError::CredentialPossibleCompromise);
    }
    Ok(Used {
        counter: auth.counter,
        backup_eligible: auth.has(BACKUP_ELIGIBLE),
        backup_state: auth.has(BACKED_UP),
    })
}

fn client_data(bytes: &[u8], kind: &str, expected: &Expected) -> Result<(), WebauthnError> {
    let c: CollectedClientData = serde_json::from_slice(bytes)?;
    if c.type_ != kind {
        return Err(WebauthnError::InvalidClientDataType);
    }
    if c.challenge != expected.challenge {
        return Err(WebauthnError::MismatchedChallenge);
    }
    if !expected
        .origins
        .iter()
        .any(|o| origins_match(false, false, &c.origin, o))
    {
        return Err(WebauthnError::InvalidRPOrigin);
    }
    if c.cross_origin.unwrap_or(false) {
        return Err(WebauthnError::CredentialCrossOrigin);
    }
    Ok(())
}

fn authenticator_data(auth: &AuthData, expected: &Expected) -> Result<(), WebauthnError> {
    if auth.rp_id_hash != expected.rp_id_hash {
        return Err(WebauthnError::InvalidRPIDHash);
    }
    if !auth.has(USER_PRESENT) {
        return Err(WebauthnError::UserNotPresent);
    }
    if auth.has(BACKED_UP) && !auth.has(BACKUP_ELIGIBLE) {
        return Err(WebauthnError::CredentialMayNotBeHardwareBound);
    }
    Ok(())
}

/// An Ed25519 COSE key's public point (RFC 8152 §13.2: kty OKP, alg EdDSA, crv Ed25519),
/// checked to be a point of the curve.
fn ed25519_key(cose_key: &[u8]) -> Result<[u8; 32], WebauthnError> {
    let Ok(Value::Map(m)) = serde_cbor_2::from_slice::<Value>(cose_key) else {
        return Err(WebauthnError::COSEKeyInvalidCBORValue);
    };
    let field = |k: i128| m.get(&Value::Integer(k));
    if field(1) != Some(&Value::Integer(1)) || field(-1) != Some(&Value::Integer(6)) {
        return Err(WebauthnError::COSEKeyInvalidType);
    }
    let Some(Value::Bytes(x)) = field(-2) else {
        return Err(WebauthnError::COSEKeyInvalidCBORValue);
    };
    let x: [u8; 32] = x
        .as_slice()
        .try_into()
        .map_err(|_| WebauthnError::COSEKeyEDDSAXInvalid)?;
    VerifyingKey::from_bytes(&x).map_err(|_| WebauthnError::COSEKeyEDDSAXInvalid)?;
    Ok(x)
}
