//! Passwords: their length rules, and the user's current password checked against its hash
//! (argon2id, on the hashing threads).
use crate::crypto::PasswordHasher;
use crate::error::{ApiError, ApiResult, Code};
use storage::{User, CREDENTIAL_PROVIDER};

/// The passwords service. Cheap to clone.
#[derive(Clone)]
pub struct Passwords {
    hasher: PasswordHasher,
    reader: actors::Reader,
    min_length: usize,
    max_length: usize,
}

impl Passwords {
    pub fn new(
        config: &crate::config::PasswordConfig,
        hasher: PasswordHasher,
        reader: actors::Reader,
    ) -> Self {
        Self {
            hasher,
            reader,
            min_length: config.min_length,
            max_length: config.max_length,
        }
    }

    /// `PASSWORD_TOO_SHORT` / `PASSWORD_TOO_LONG` against the configured bounds.
    pub fn check_password_length(&self, password: &str) -> ApiResult<()> {
        let len = password.chars().count();
        if len < self.min_length {
            return Err(Code::PasswordTooShort.into());
        }
        if len > self.max_length {
            return Err(Code::PasswordTooLong.into());
        }
        Ok(())
    }

    /// The hash of the user's password (`None`: the user has none).
    pub async fn credential_hash(&self, user: &User) -> ApiResult<Option<String>> {
        Ok(self
            .reader
            .list_accounts(&user.id)
            .await?
            .into_iter()
            .find(|a| a.provider_id == CREDENTIAL_PROVIDER)
            .and_then(|a| a.password))
    }

    /// Whether `password` is the user's current password (`None`: the user has none).
    pub async fn check_password(&self, user: &User, password: &str) -> ApiResult<Option<bool>> {
        match self.credential_hash(user).await? {
            Some(h) => Ok(Some(
                self.hasher
                    .verify(password.to_owned(), h)
                    .await
                    .map_err(ApiError::internal)?,
            )),
            None => Ok(None),
        }
    }
}
