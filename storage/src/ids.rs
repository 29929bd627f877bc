//! Newtype ids: random, URL-safe, 32 characters, so they can be neither guessed nor confused.
use rand::distributions::Alphanumeric;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// `len` characters of `[A-Za-z0-9]` from the OS-seeded CSPRNG (`ThreadRng` is ChaCha-based).
pub fn random_string(len: usize) -> String {
    rand::thread_rng()
        .sample_iter(&Alphanumeric)
        .take(len)
        .map(char::from)
        .collect()
}

/// `len` characters of `[0-9a-z]` from the CSPRNG.
pub fn random_lower_alnum(len: usize) -> String {
    const SET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut rng = rand::thread_rng();
    (0..len)
        .map(|_| SET[rng.gen_range(0..SET.len())] as char)
        .collect()
}

macro_rules! id_type {
    ($($name:ident),* $(,)?) => {$(
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl $name {
            /// A fresh random id.
            pub fn generate() -> Self {
                Self(random_string(32))
            }
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                Self(s)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self(s.to_owned())
            }
        }
    )*};
}

id_type!(
    UserId,
    AccountId,
    SessionId,
    VerificationId,
    OrgId,
    MemberId,
    InvitationId,
    TeamId,
    TeamMemberId,
    RoleId,
    KeyPairId,
    PasskeyId,
    ApiKeyId,
);
