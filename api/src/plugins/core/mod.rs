//! The core of better-auth: sign-up, sign-in and sign-out with email and password
//! (`auth.rs`, its service `credentials.rs`), sessions (`sessions.rs`), the signed-in user's profile (`user.rs`), the account
//! flows (`account/`: verification, password, email change, deletion, linked accounts), and
//! health (`meta.rs`).
mod account;
mod auth;
mod credentials;
pub(crate) mod mailbox;
pub mod meta;
mod sessions;
mod user;

pub use account::{
    AccountMail, DeletionApi, EmailApi, LinkedAccountApi, PasswordApi, VerificationApi,
};
pub use auth::AuthApi;
pub use credentials::{Credentials, Inner as CredentialsInner};
pub use meta::MetaApi;
pub use sessions::SessionApi;
pub use user::UserApi;

/// The core's operations.
pub type Apis = (
    AuthApi,
    SessionApi,
    UserApi,
    VerificationApi,
    PasswordApi,
    EmailApi,
    DeletionApi,
    LinkedAccountApi,
    MetaApi,
);

pub fn apis() -> Apis {
    (
        AuthApi,
        SessionApi,
        UserApi,
        VerificationApi,
        PasswordApi,
        EmailApi,
        DeletionApi,
        LinkedAccountApi,
        MetaApi,
    )
}
