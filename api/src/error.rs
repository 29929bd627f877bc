//! The wire error: `{code, message}` (plus `details` for validation failures). This is the one
//! place that decides which HTTP status each error code gets.
use poem::http::StatusCode;
use poem::{IntoResponse, Response};
use poem_openapi::registry::{MetaMediaType, MetaResponse, MetaResponses, Registry};
use poem_openapi::{ApiResponse, Object};
use std::borrow::Cow;

macro_rules! codes {
    ($($variant:ident => ($code:literal, $status:ident, $msg:literal)),* $(,)?) => {
        /// Every error code Gatehouse answers with.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Code { $($variant),* }

        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$variant),*];

            /// The SCREAMING_SNAKE code clients match on.
            pub fn code(self) -> &'static str {
                match self { $(Code::$variant => $code),* }
            }

            /// The HTTP status of this code: the single mapping.
            pub fn status(self) -> StatusCode {
                match self { $(Code::$variant => StatusCode::$status),* }
            }

            /// The default message (better-auth's text where it has one, spec §8).
            pub fn message(self) -> &'static str {
                match self { $(Code::$variant => $msg),* }
            }
        }
    };
}

codes! {
    ValidationError => ("VALIDATION_ERROR", BAD_REQUEST, "Invalid body parameters"),
    InvalidJson => ("INVALID_JSON", BAD_REQUEST, "Invalid JSON body"),
    InvalidEmail => ("INVALID_EMAIL", BAD_REQUEST, "Invalid email"),
    PasswordTooShort => ("PASSWORD_TOO_SHORT", BAD_REQUEST, "Password too short"),
    PasswordTooLong => ("PASSWORD_TOO_LONG", BAD_REQUEST, "Password too long"),
    SessionNotFound => ("SESSION_NOT_FOUND", BAD_REQUEST, "Session not found"),
    FailedToGetSession => ("FAILED_TO_GET_SESSION", BAD_REQUEST, "Failed to get session"),
    EmailCanNotBeUpdated => ("EMAIL_CAN_NOT_BE_UPDATED", BAD_REQUEST, "Email can not be updated"),
    FieldNotAllowed => ("FIELD_NOT_ALLOWED", BAD_REQUEST, "Field is not allowed to be set"),
    NoFieldsToUpdate => ("NO_FIELDS_TO_UPDATE", BAD_REQUEST, "No fields to update"),
    VerificationEmailNotEnabled => ("VERIFICATION_EMAIL_ISNT_ENABLED", BAD_REQUEST, "Verification email isn't enabled"),
    ResetPasswordDisabled => ("RESET_PASSWORD_ISNT_ENABLED", BAD_REQUEST, "Reset password isn't enabled"),
    InvalidToken => ("INVALID_TOKEN", BAD_REQUEST, "Invalid token"),
    TokenExpired => ("TOKEN_EXPIRED", BAD_REQUEST, "Token expired"),
    UserNotFound => ("USER_NOT_FOUND", BAD_REQUEST, "User not found"),
    InvalidPassword => ("INVALID_PASSWORD", BAD_REQUEST, "Invalid password"),
    CredentialAccountNotFound => ("CREDENTIAL_ACCOUNT_NOT_FOUND", BAD_REQUEST, "Credential account not found"),
    UserAlreadyHasPassword => ("USER_ALREADY_HAS_PASSWORD", BAD_REQUEST, "user already has a password"),
    SessionExpired => ("SESSION_EXPIRED", BAD_REQUEST, "Session expired. Re-authenticate to perform this action."),
    ChangeEmailDisabled => ("CHANGE_EMAIL_IS_DISABLED", BAD_REQUEST, "Change email is disabled"),
    EmailIsTheSame => ("EMAIL_IS_THE_SAME", BAD_REQUEST, "Email is the same"),
    CouldntUpdateYourEmail => ("COULDNT_UPDATE_YOUR_EMAIL", BAD_REQUEST, "Couldn't update your email"),
    LastAccount => ("FAILED_TO_UNLINK_LAST_ACCOUNT", BAD_REQUEST, "You can't unlink your last account"),
    AccountNotFound => ("ACCOUNT_NOT_FOUND", BAD_REQUEST, "Account not found"),
    DeleteUserDisabled => ("DELETE_USER_IS_DISABLED", BAD_REQUEST, "Delete user is disabled"),
    OrganizationNotFound => ("ORGANIZATION_NOT_FOUND", BAD_REQUEST, "Organization not found"),
    OrganizationAlreadyExists => ("ORGANIZATION_ALREADY_EXISTS", BAD_REQUEST, "Organization already exists"),
    SlugIsTaken => ("SLUG_IS_TAKEN", BAD_REQUEST, "slug is taken"),
    NoActiveOrganization => ("NO_ACTIVE_ORGANIZATION", BAD_REQUEST, "No active organization"),
    MemberNotFound => ("MEMBER_NOT_FOUND", BAD_REQUEST, "Member not found"),
    AlreadyMember => ("USER_IS_ALREADY_A_MEMBER_OF_THIS_ORGANIZATION", BAD_REQUEST, "User is already a member of this organization"),
    NotAMemberOfThis => ("YOU_ARE_NOT_A_MEMBER_OF_THIS_ORGANIZATION", FORBIDDEN, "You are not a member of this organization"),
    NotAMemberToDelete => ("USER_IS_NOT_A_MEMBER_OF_THE_ORGANIZATION", BAD_REQUEST, "User is not a member of the organization"),
    NoOwnerLeft => ("YOU_CANNOT_LEAVE_THE_ORGANIZATION_WITHOUT_AN_OWNER", BAD_REQUEST, "You cannot leave the organization without an owner"),
    OrganizationSlugTaken => ("ORGANIZATION_SLUG_ALREADY_TAKEN", BAD_REQUEST, "Organization slug already taken"),
    LastOwner => ("YOU_CANNOT_LEAVE_THE_ORGANIZATION_AS_THE_ONLY_OWNER", BAD_REQUEST, "You cannot leave the organization as the only owner"),
    InvalidRole => ("ROLE_NOT_FOUND", BAD_REQUEST, "Role not found"),
    OrganizationLimit => ("YOU_HAVE_REACHED_THE_MAXIMUM_NUMBER_OF_ORGANIZATIONS", FORBIDDEN, "You have reached the maximum number of organizations"),
    MembershipLimit => ("ORGANIZATION_MEMBERSHIP_LIMIT_REACHED", FORBIDDEN, "Organization membership limit reached"),
    NotAMember => ("USER_IS_NOT_A_MEMBER_OF_THE_ORGANIZATION", FORBIDDEN, "User is not a member of the organization"),
    NotATeamMember => ("USER_IS_NOT_A_MEMBER_OF_THE_TEAM", FORBIDDEN, "User is not a member of the team"),
    NotATeamMemberToList => ("USER_IS_NOT_A_MEMBER_OF_THE_TEAM", BAD_REQUEST, "User is not a member of the team"),
    Forbidden => ("FORBIDDEN", FORBIDDEN, "You are not allowed to access resource"),
    ServerCredentialRequired => ("SERVER_CREDENTIAL_REQUIRED", FORBIDDEN, "userId is only accepted from server calls"),
    NotAllowedToCreateRole => ("YOU_ARE_NOT_ALLOWED_TO_CREATE_A_ROLE", FORBIDDEN, "You are not allowed to create a role"),
    NotAllowedToUpdateRole => ("YOU_ARE_NOT_ALLOWED_TO_UPDATE_A_ROLE", FORBIDDEN, "You are not allowed to update a role"),
    NotAllowedToUpdateOrganization => ("YOU_ARE_NOT_ALLOWED_TO_UPDATE_THIS_ORGANIZATION", FORBIDDEN, "You are not allowed to update this organization"),
    NotAllowedToDeleteOrganization => ("YOU_ARE_NOT_ALLOWED_TO_DELETE_THIS_ORGANIZATION", FORBIDDEN, "You are not allowed to delete this organization"),
    NotAllowedToInviteUsers => ("YOU_ARE_NOT_ALLOWED_TO_INVITE_USERS_TO_THIS_ORGANIZATION", FORBIDDEN, "You are not allowed to invite users to this organization"),
    NotAllowedToCancelInvitation => ("YOU_ARE_NOT_ALLOWED_TO_CANCEL_THIS_INVITATION", FORBIDDEN, "You are not allowed to cancel this invitation"),
    NotAllowedToCreateTeams => ("YOU_ARE_NOT_ALLOWED_TO_CREATE_TEAMS_IN_THIS_ORGANIZATION", FORBIDDEN, "You are not allowed to create teams in this organization"),
    NotAllowedToUpdateTeam => ("YOU_ARE_NOT_ALLOWED_TO_UPDATE_THIS_TEAM", FORBIDDEN, "You are not allowed to update this team"),
    NotAllowedToCreateTeamMember => ("YOU_ARE_NOT_ALLOWED_TO_CREATE_A_NEW_TEAM_MEMBER", FORBIDDEN, "You are not allowed to create a new member"),
    NotAllowedToRemoveTeamMember => ("YOU_ARE_NOT_ALLOWED_TO_REMOVE_A_TEAM_MEMBER", FORBIDDEN, "You are not allowed to remove a team member"),
    NotAllowedToDeleteTeam => ("YOU_ARE_NOT_ALLOWED_TO_DELETE_THIS_TEAM", FORBIDDEN, "You are not allowed to delete this team"),
    NotAllowedToDeleteRole => ("YOU_ARE_NOT_ALLOWED_TO_DELETE_A_ROLE", FORBIDDEN, "You are not allowed to delete a role"),
    NotAllowedToReadRole => ("YOU_ARE_NOT_ALLOWED_TO_READ_A_ROLE", FORBIDDEN, "You are not allowed to read a role"),
    NotAllowedToUpdateMember => ("YOU_ARE_NOT_ALLOWED_TO_UPDATE_THIS_MEMBER", FORBIDDEN, "You are not allowed to update this member"),
    NotAllowedToDeleteMember => ("YOU_ARE_NOT_ALLOWED_TO_DELETE_THIS_MEMBER", UNAUTHORIZED, "You are not allowed to delete this member"),
    NotAllowedToInviteWithRole => ("YOU_ARE_NOT_ALLOWED_TO_INVITE_USER_WITH_THIS_ROLE", FORBIDDEN, "You are not allowed to invite a user with this role"),
    InvitationNotFound => ("INVITATION_NOT_FOUND", BAD_REQUEST, "Invitation not found"),
    InviterGone => ("INVITER_IS_NO_LONGER_A_MEMBER_OF_THE_ORGANIZATION", BAD_REQUEST, "Inviter is no longer a member of the organization"),
    InvitationLimit => ("INVITATION_LIMIT_REACHED", FORBIDDEN, "Invitation limit reached"),
    InvitationEmailVerificationRequired => ("EMAIL_VERIFICATION_REQUIRED_FOR_INVITATION", FORBIDDEN, "Email verification required to view or list invitations for the session email"),
    AlreadyInvited => ("USER_IS_ALREADY_INVITED_TO_THIS_ORGANIZATION", BAD_REQUEST, "User is already invited to this organization"),
    TeamNotFound => ("TEAM_NOT_FOUND", BAD_REQUEST, "Team not found"),
    NotRecipient => ("YOU_ARE_NOT_THE_RECIPIENT_OF_THE_INVITATION", FORBIDDEN, "You are not the recipient of the invitation"),
    InvitationEmailNotVerified => ("EMAIL_VERIFICATION_REQUIRED_BEFORE_ACCEPTING_OR_REJECTING_INVITATION", FORBIDDEN, "Email verification required before accepting or rejecting invitation"),
    TeamAlreadyExists => ("TEAM_ALREADY_EXISTS", BAD_REQUEST, "Team already exists"),
    LastTeam => ("UNABLE_TO_REMOVE_LAST_TEAM", BAD_REQUEST, "Unable to remove last team"),
    RoleAlreadyExists => ("ROLE_NAME_IS_ALREADY_TAKEN", BAD_REQUEST, "That role name is already taken"),
    RoleInUse => ("ROLE_IS_ASSIGNED_TO_MEMBERS", BAD_REQUEST, "Cannot delete or rename a role that is assigned to members"),
    InvalidEmailOrPassword => ("INVALID_EMAIL_OR_PASSWORD", UNAUTHORIZED, "Invalid email or password"),
    Unauthorized => ("UNAUTHORIZED", UNAUTHORIZED, "Unauthorized"),
    InvalidOrigin => ("INVALID_ORIGIN", FORBIDDEN, "Invalid origin"),
    MissingOrNullOrigin => ("MISSING_OR_NULL_ORIGIN", FORBIDDEN, "Missing or null Origin"),
    InvalidCallbackurl => ("INVALID_CALLBACK_URL", FORBIDDEN, "Invalid callbackURL"),
    InvalidRedirecturl => ("INVALID_REDIRECT_URL", FORBIDDEN, "Invalid redirectURL"),
    InvalidErrorCallbackurl => ("INVALID_ERROR_CALLBACK_URL", FORBIDDEN, "Invalid errorCallbackURL"),
    InvalidNewUserCallbackurl => ("INVALID_NEW_USER_CALLBACK_URL", FORBIDDEN, "Invalid newUserCallbackURL"),
    EmailNotVerified => ("EMAIL_NOT_VERIFIED", FORBIDDEN, "Email not verified"),
    SessionNotFresh => ("SESSION_NOT_FRESH", FORBIDDEN, "Session is not fresh"),
    NotFound => ("NOT_FOUND", NOT_FOUND, "Not found"),
    ProviderNotFound => ("PROVIDER_NOT_FOUND", NOT_FOUND, "Provider not found"),
    IdTokenNotSupported => ("ID_TOKEN_NOT_SUPPORTED", NOT_FOUND, "id_token not supported"),
    // A bad id token, or a bad verification link (as 1.7 answers both).
    InvalidIdToken => ("INVALID_TOKEN", UNAUTHORIZED, "Invalid token"),
    UserEmailNotFound => ("USER_EMAIL_NOT_FOUND", UNAUTHORIZED, "User email not found"),
    OauthLinkError => ("OAUTH_LINK_ERROR", UNAUTHORIZED, "account not linked"),
    LinkingNotAllowed => ("LINKING_NOT_ALLOWED", UNAUTHORIZED, "Account not linked - linking not allowed"),
    LinkingDifferentEmailsNotAllowed => ("LINKING_DIFFERENT_EMAILS_NOT_ALLOWED", UNAUTHORIZED, "Account not linked - different emails not allowed"),
    SocialAccountAlreadyLinked => ("SOCIAL_ACCOUNT_ALREADY_LINKED", CONFLICT, "Social account already linked"),
    ProviderNotSupported => ("PROVIDER_NOT_SUPPORTED", BAD_REQUEST, "Provider credential is not supported."),
    ProviderNotConfigured => ("PROVIDER_NOT_CONFIGURED", BAD_REQUEST, "Account is not associated with a configured social provider."),
    FailedToGetAccessToken => ("FAILED_TO_GET_ACCESS_TOKEN", BAD_REQUEST, "Failed to get a valid access token"),
    TokenRefreshNotSupported => ("TOKEN_REFRESH_NOT_SUPPORTED", BAD_REQUEST, "Provider does not support token refreshing."),
    RefreshTokenNotFound => ("REFRESH_TOKEN_NOT_FOUND", BAD_REQUEST, "Refresh token not found"),
    FailedToRefreshAccessToken => ("FAILED_TO_REFRESH_ACCESS_TOKEN", BAD_REQUEST, "Failed to refresh access token"),
    AccessTokenNotFound => ("ACCESS_TOKEN_NOT_FOUND", BAD_REQUEST, "Access token not found"),
    FailedToGetUserInfo => ("FAILED_TO_GET_USER_INFO", UNAUTHORIZED, "Failed to get user info"),
    DeletionNeedsSession => ("FAILED_TO_GET_USER_INFO", NOT_FOUND, "Failed to get user info"),
    DeletionTokenInvalid => ("INVALID_TOKEN", NOT_FOUND, "Invalid token"),
    VerifyTokenExpired => ("TOKEN_EXPIRED", UNAUTHORIZED, "Token expired"),
    VerifyUserNotFound => ("USER_NOT_FOUND", UNAUTHORIZED, "User not found"),
    EmailMismatch => ("EMAIL_MISMATCH", BAD_REQUEST, "Email mismatch"),
    EmailAlreadyVerified => ("EMAIL_ALREADY_VERIFIED", BAD_REQUEST, "Email is already verified"),
    BannedUser => ("BANNED_USER", FORBIDDEN, "You have been banned from this application. Please contact support if you believe this is an error."),
    AdminUserNotFound => ("USER_NOT_FOUND", NOT_FOUND, "User not found"),
    CannotBanYourself => ("YOU_CANNOT_BAN_YOURSELF", BAD_REQUEST, "You cannot ban yourself"),
    CannotRemoveYourself => ("YOU_CANNOT_REMOVE_YOURSELF", BAD_REQUEST, "You cannot remove yourself"),
    CannotImpersonateAdmins => ("YOU_CANNOT_IMPERSONATE_ADMINS", FORBIDDEN, "You cannot impersonate admins"),
    NonExistentRole => ("YOU_ARE_NOT_ALLOWED_TO_SET_NON_EXISTENT_VALUE", BAD_REQUEST, "You are not allowed to set a non-existent role value"),
    UserAlreadyExistsUseAnotherEmail => ("USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL", BAD_REQUEST, "User already exists. Use another email."),
    NoDataToUpdate => ("NO_DATA_TO_UPDATE", BAD_REQUEST, "No data to update"),
    PasswordCannotBeUpdatedViaUpdateUser => ("PASSWORD_CANNOT_BE_UPDATED_VIA_UPDATE_USER", BAD_REQUEST, "Password cannot be updated through update-user. Use the set-user-password endpoint instead"),
    UserIdCannotBeUpdated => ("USER_ID_CANNOT_BE_UPDATED", BAD_REQUEST, "User id cannot be updated"),
    NotImpersonating => ("NOT_IMPERSONATING", BAD_REQUEST, "You are not impersonating anyone"),
    AdminSessionNotFound => ("ADMIN_SESSION_NOT_FOUND", BAD_REQUEST, "Failed to find admin session"),
    NoPermissionsPassed => ("INVALID_PERMISSION_CHECK", BAD_REQUEST, "invalid permission check. no permission(s) were passed."),
    NotAllowedToCreateUsers => ("YOU_ARE_NOT_ALLOWED_TO_CREATE_USERS", FORBIDDEN, "You are not allowed to create users"),
    NotAllowedToListUsers => ("YOU_ARE_NOT_ALLOWED_TO_LIST_USERS", FORBIDDEN, "You are not allowed to list users"),
    NotAllowedToReadAuditLog => ("YOU_ARE_NOT_ALLOWED_TO_READ_THE_AUDIT_LOG", FORBIDDEN, "You are not allowed to read the audit log"),
    NotAllowedToChangeUsersRole => ("YOU_ARE_NOT_ALLOWED_TO_CHANGE_USERS_ROLE", FORBIDDEN, "You are not allowed to change users role"),
    NotAllowedToBanUsers => ("YOU_ARE_NOT_ALLOWED_TO_BAN_USERS", FORBIDDEN, "You are not allowed to ban users"),
    NotAllowedToImpersonateUsers => ("YOU_ARE_NOT_ALLOWED_TO_IMPERSONATE_USERS", FORBIDDEN, "You are not allowed to impersonate users"),
    NotAllowedToDeleteUsers => ("YOU_ARE_NOT_ALLOWED_TO_DELETE_USERS", FORBIDDEN, "You are not allowed to delete users"),
    NotAllowedToSetUsersPassword => ("YOU_ARE_NOT_ALLOWED_TO_SET_USERS_PASSWORD", FORBIDDEN, "You are not allowed to set users password"),
    NotAllowedToGetUser => ("YOU_ARE_NOT_ALLOWED_TO_GET_USER", FORBIDDEN, "You are not allowed to get user"),
    NotAllowedToUpdateUsers => ("YOU_ARE_NOT_ALLOWED_TO_UPDATE_USERS", FORBIDDEN, "You are not allowed to update users"),
    NotAllowedToSetUsersEmail => ("YOU_ARE_NOT_ALLOWED_TO_SET_USERS_EMAIL", FORBIDDEN, "You are not allowed to update users email"),
    NotAllowedToListUsersSessions => ("YOU_ARE_NOT_ALLOWED_TO_LIST_USERS_SESSIONS", FORBIDDEN, "You are not allowed to list users sessions"),
    NotAllowedToRevokeUsersSessions => ("YOU_ARE_NOT_ALLOWED_TO_REVOKE_USERS_SESSIONS", FORBIDDEN, "You are not allowed to revoke users sessions"),
    MethodNotAllowed => ("METHOD_NOT_ALLOWED", METHOD_NOT_ALLOWED, "Method not allowed"),
    MethodNotAllowedDeferSessionRequired => (
        "METHOD_NOT_ALLOWED_DEFER_SESSION_REQUIRED",
        METHOD_NOT_ALLOWED,
        "POST method requires deferSessionRefresh to be enabled in session config"
    ),
    PayloadTooLarge => ("PAYLOAD_TOO_LARGE", PAYLOAD_TOO_LARGE, "Request body is too large"),
    TooManyRequests => ("TOO_MANY_REQUESTS", TOO_MANY_REQUESTS, "Too many requests. Please try again later."),
    InvalidCode => ("INVALID_CODE", UNAUTHORIZED, "Invalid code"),
    InvalidOtp => ("INVALID_OTP", BAD_REQUEST, "Invalid OTP"),
    OtpExpired => ("OTP_EXPIRED", BAD_REQUEST, "OTP expired"),
    OtpTooManyAttempts => ("TOO_MANY_ATTEMPTS", FORBIDDEN, "Too many attempts"),
    MailNotConfigured => ("MAIL_NOT_CONFIGURED", BAD_REQUEST, "This server sends no mail: codes and links by mail are off"),
    ChangeEmailOtpDisabled => ("CHANGE_EMAIL_WITH_OTP_DISABLED", BAD_REQUEST, "Change email with OTP is disabled"),
    InvalidOtpType => ("INVALID_OTP_TYPE", BAD_REQUEST, "Invalid OTP type"),
    CurrentEmailOtpRequired => ("OTP_REQUIRED", BAD_REQUEST, "OTP is required to verify current email"),
    InvalidTwoFactorCookie => ("INVALID_TWO_FACTOR_COOKIE", UNAUTHORIZED, "Invalid two factor cookie"),
    TooManyAttemptsRequestNewCode => ("TOO_MANY_ATTEMPTS_REQUEST_NEW_CODE", BAD_REQUEST, "Too many attempts. Please request a new code."),
    TotpNotEnabled => ("TOTP_NOT_ENABLED", BAD_REQUEST, "TOTP not enabled"),
    OtpNotEnabled => ("OTP_NOT_ENABLED", BAD_REQUEST, "OTP not enabled"),
    TwoFactorNotEnabled => ("TWO_FACTOR_NOT_ENABLED", BAD_REQUEST, "Two factor isn't enabled"),
    InvalidBackupCode => ("INVALID_BACKUP_CODE", UNAUTHORIZED, "Invalid backup code"),
    TwoFactorLocked => ("TOO_MANY_ATTEMPTS", TOO_MANY_REQUESTS, "Too many failed codes. Try again in 15 minutes."),
    ChallengeNotFound => ("CHALLENGE_NOT_FOUND", BAD_REQUEST, "Challenge not found"),
    NotAllowedToRegisterPasskey => ("YOU_ARE_NOT_ALLOWED_TO_REGISTER_THIS_PASSKEY", UNAUTHORIZED, "You are not allowed to register this passkey"),
    FailedToVerifyRegistration => ("FAILED_TO_VERIFY_REGISTRATION", BAD_REQUEST, "Failed to verify registration"),
    PreviouslyRegistered => ("PREVIOUSLY_REGISTERED", BAD_REQUEST, "Previously registered"),
    PasskeyNotFound => ("PASSKEY_NOT_FOUND", NOT_FOUND, "Passkey not found"),
    UnknownPasskey => ("PASSKEY_NOT_FOUND", UNAUTHORIZED, "Passkey not found"),
    AuthenticationFailed => ("AUTHENTICATION_FAILED", UNAUTHORIZED, "Authentication failed"),
    MalformedAuthentication => ("AUTHENTICATION_FAILED", BAD_REQUEST, "Authentication failed"),
    PasskeyCloned => ("AUTHENTICATION_FAILED", UNAUTHORIZED, "Authentication failed"),
    LastSignInMethod => ("LAST_SIGN_IN_METHOD", BAD_REQUEST, "This is your only way to sign in: add another one before removing it"),
    InvalidApiKey => ("INVALID_API_KEY", UNAUTHORIZED, "Invalid API key."),
    MalformedApiKey => ("INVALID_API_KEY", FORBIDDEN, "Invalid API key."),
    ApiKeyNotFound => ("KEY_NOT_FOUND", NOT_FOUND, "API Key not found"),
    ApiKeyDisabled => ("KEY_DISABLED", UNAUTHORIZED, "API Key is disabled"),
    ApiKeyExpired => ("KEY_EXPIRED", UNAUTHORIZED, "API Key has expired"),
    ApiKeyUsageExceeded => ("USAGE_EXCEEDED", TOO_MANY_REQUESTS, "API Key has reached its usage limit"),
    ApiKeyRateLimited => ("RATE_LIMITED", TOO_MANY_REQUESTS, "Rate limit exceeded."),
    ApiKeyUserBanned => ("USER_BANNED", UNAUTHORIZED, "User is banned"),
    ApiKeyNotAccepted => ("UNAUTHORIZED", UNAUTHORIZED, "This route needs a signed-in session: an API key is not accepted here"),
    OrgApiKeyOutsideOrganization => ("INVALID_REFERENCE_ID_FROM_API_KEY", UNAUTHORIZED, "An organization's API key acts only on that organization's routes"),
    UnauthorizedSession => ("UNAUTHORIZED_SESSION", UNAUTHORIZED, "Unauthorized or invalid session"),
    ServerOnlyProperty => ("SERVER_ONLY_PROPERTY", BAD_REQUEST, "The property you're trying to set can only be set from the server auth instance only."),
    MetadataDisabled => ("METADATA_DISABLED", BAD_REQUEST, "Metadata is disabled."),
    InvalidMetadataType => ("INVALID_METADATA_TYPE", BAD_REQUEST, "metadata must be an object or undefined"),
    RefillAmountWithoutInterval => ("REFILL_AMOUNT_AND_INTERVAL_REQUIRED", BAD_REQUEST, "refillAmount is required when refillInterval is provided"),
    RefillIntervalWithoutAmount => ("REFILL_INTERVAL_AND_AMOUNT_REQUIRED", BAD_REQUEST, "refillInterval is required when refillAmount is provided"),
    ExpiresInTooSmall => ("EXPIRES_IN_IS_TOO_SMALL", BAD_REQUEST, "The expiresIn is smaller than the predefined minimum value."),
    ExpiresInTooLarge => ("EXPIRES_IN_IS_TOO_LARGE", BAD_REQUEST, "The expiresIn is larger than the predefined maximum value."),
    CustomExpiryDisabled => ("KEY_DISABLED_EXPIRATION", BAD_REQUEST, "Custom key expiration values are disabled."),
    InvalidPrefixLength => ("INVALID_PREFIX_LENGTH", BAD_REQUEST, "The prefix length is either too large or too small."),
    InvalidNameLength => ("INVALID_NAME_LENGTH", BAD_REQUEST, "The name length is either too large or too small."),
    ApiKeyNameRequired => ("NAME_REQUIRED", BAD_REQUEST, "API Key name is required."),
    NoValuesToUpdate => ("NO_VALUES_TO_UPDATE", BAD_REQUEST, "No values to update."),
    InvalidRemaining => ("INVALID_REMAINING", BAD_REQUEST, "The remaining count is either too large or too small."),
    NotMemberOfKeyOrganization => ("USER_NOT_MEMBER_OF_ORGANIZATION", FORBIDDEN, "You are not a member of the organization that owns this API key."),
    InsufficientApiKeyPermissions => ("INSUFFICIENT_API_KEY_PERMISSIONS", FORBIDDEN, "You do not have permission to perform this action on organization API keys."),
    WebhookNotFound => ("WEBHOOK_NOT_FOUND", NOT_FOUND, "Webhook endpoint not found"),
    WebhookDeliveryNotFound => ("WEBHOOK_DELIVERY_NOT_FOUND", NOT_FOUND, "Webhook delivery not found"),
    WebhookDeliveryPending => ("WEBHOOK_DELIVERY_PENDING", CONFLICT, "This delivery is still being tried: redeliver it once it has succeeded or failed"),
    InvalidWebhookUrl => ("INVALID_WEBHOOK_URL", BAD_REQUEST, "The endpoint URL must be an absolute https:// URL"),
    WebhookUrlNotAllowed => ("WEBHOOK_URL_NOT_ALLOWED", BAD_REQUEST, "The endpoint URL points to a private, loopback, link-local or metadata address"),
    InvalidWebhookEvents => ("INVALID_WEBHOOK_EVENTS", BAD_REQUEST, "Name at least one known event (or a pattern such as member.* or *)"),
    TooManyWebhooks => ("TOO_MANY_WEBHOOKS", FORBIDDEN, "This organization has reached its number of webhook endpoints"),
    NotAllowedToManageWebhooks => ("YOU_ARE_NOT_ALLOWED_TO_MANAGE_WEBHOOKS", FORBIDDEN, "You are not allowed to manage this organization's webhooks"),
    RequestTimeout => ("REQUEST_TIMEOUT", REQUEST_TIMEOUT, "The request body did not arrive in time"),
    UnsupportedMediaType => ("UNSUPPORTED_MEDIA_TYPE", UNSUPPORTED_MEDIA_TYPE, "Content-Type must be application/json"),
    UserAlreadyExists => ("USER_ALREADY_EXISTS", UNPROCESSABLE_ENTITY, "User already exists"),
    FailedToCreateUser => ("FAILED_TO_CREATE_USER", UNPROCESSABLE_ENTITY, "Failed to create user"),
    FailedToCreateSession => ("FAILED_TO_CREATE_SESSION", INTERNAL_SERVER_ERROR, "Failed to create session"),
    InternalServerError => ("INTERNAL_SERVER_ERROR", INTERNAL_SERVER_ERROR, "Internal server error"),
    ServiceUnavailable => ("SERVICE_UNAVAILABLE", SERVICE_UNAVAILABLE, "Service temporarily unavailable"),
}

/// The JSON body of every error.
#[derive(Debug, Clone, Object)]
#[oai(rename = "Error")]
pub struct ErrorBody {
    /// Stable machine-readable code, e.g. `INVALID_EMAIL_OR_PASSWORD`.
    pub code: String,
    /// Human-readable message.
    pub message: String,
    /// For validation failures: what was wrong with which field.
    #[oai(skip_serializing_if_is_none)]
    pub details: Option<Vec<String>>,
}

#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: Code,
    pub message: Cow<'static, str>,
    pub details: Option<Vec<String>>,
    /// `Set-Cookie` values to send with the error (e.g. clearing a dead session's cookies).
    pub cookies: Vec<String>,
    /// Seconds until a refused request may be tried again (`X-Retry-After`, as better-auth).
    pub retry_after: Option<u64>,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(code: Code) -> Self {
        Self {
            code,
            message: Cow::Borrowed(code.message()),
            details: None,
            cookies: Vec::new(),
            retry_after: None,
        }
    }

    /// 429: too many requests; may be tried again after `seconds`.
    pub fn too_many(seconds: u64) -> Self {
        Self {
            retry_after: Some(seconds.max(1)),
            ..Self::new(Code::TooManyRequests)
        }
    }

    pub fn with_message(code: Code, message: impl Into<Cow<'static, str>>) -> Self {
        Self {
            message: message.into(),
            ..Self::new(code)
        }
    }

    pub fn validation(query: bool, details: Vec<String>) -> Self {
        let message = if query {
            "Invalid query parameters"
        } else {
            "Invalid body parameters"
        };
        Self {
            details: (!details.is_empty()).then_some(details),
            ..Self::with_message(Code::ValidationError, message)
        }
    }

    /// Logs the cause (never sent to the client) and answers a generic 500.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "internal error");
        Self::new(Code::InternalServerError)
    }

    /// This error with code `to` instead when its code is `from` (a route answering a rule
    /// with better-auth's code for that route).
    pub fn recode(self, from: Code, to: Code) -> Self {
        if self.code == from {
            Self::new(to).with_cookies(self.cookies)
        } else {
            self
        }
    }

    pub fn with_cookies(mut self, cookies: Vec<String>) -> Self {
        self.cookies = cookies;
        self
    }

    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            code: self.code.code().to_owned(),
            message: self.message.to_string(),
            details: self.details.clone(),
        }
    }
}

impl From<Code> for ApiError {
    fn from(code: Code) -> Self {
        Self::new(code)
    }
}

impl From<actors::ActorError> for ApiError {
    fn from(e: actors::ActorError) -> Self {
        match e {
            actors::ActorError::Refused(rule) => {
                use actors::Rule;
                match rule {
                    Rule::LastAccount => Code::LastAccount.into(),
                    Rule::LastSignInMethod => Code::LastSignInMethod.into(),
                    Rule::PasskeyRegistered => Code::PreviouslyRegistered.into(),
                    Rule::PasskeyNotFound => Code::PasskeyNotFound.into(),
                    Rule::ApiKeyNotFound => Code::ApiKeyNotFound.into(),
                    Rule::ApiKeyDisabled => Code::ApiKeyDisabled.into(),
                    Rule::ApiKeyExpired => Code::ApiKeyExpired.into(),
                    Rule::ApiKeyUsageExceeded => Code::ApiKeyUsageExceeded.into(),
                    Rule::ApiKeyRateLimited { retry_in_ms } => {
                        let mut e = ApiError::new(Code::ApiKeyRateLimited);
                        e.retry_after = Some((retry_in_ms.max(0) as u64).div_ceil(1000));
                        e
                    }
                    Rule::PasskeyUsedMeanwhile => Code::AuthenticationFailed.into(),
                    Rule::TwoFactorNotEnabled => Code::TwoFactorNotEnabled.into(),
                    Rule::CodeUsed => Code::InvalidCode.into(),
                    Rule::InvalidBackupCode => Code::InvalidBackupCode.into(),
                    Rule::ChallengeTaken => Code::InvalidTwoFactorCookie.into(),
                    Rule::AccountNotFound => Code::AccountNotFound.into(),
                    Rule::HasPassword => Code::UserAlreadyHasPassword.into(),
                    Rule::OrganizationNotFound => Code::OrganizationNotFound.into(),
                    Rule::NotAMember => Code::NotAMember.into(),
                    Rule::Forbidden(resource, action) => match (resource, action) {
                        ("organization", "update") => Code::NotAllowedToUpdateOrganization.into(),
                        ("organization", "delete") => Code::NotAllowedToDeleteOrganization.into(),
                        ("invitation", "create") | ("member", "create") => {
                            Code::NotAllowedToInviteUsers.into()
                        }
                        ("invitation", "cancel") => Code::NotAllowedToCancelInvitation.into(),
                        ("member", "update") => Code::NotAllowedToUpdateMember.into(),
                        ("member", "delete") => Code::NotAllowedToDeleteMember.into(),
                        ("team", "create") => Code::NotAllowedToCreateTeams.into(),
                        ("team", "update") => Code::NotAllowedToUpdateTeam.into(),
                        ("team", "delete") => Code::NotAllowedToDeleteTeam.into(),
                        ("ac", "create") => Code::NotAllowedToCreateRole.into(),
                        ("ac", "update") => Code::NotAllowedToUpdateRole.into(),
                        ("ac", "delete") => Code::NotAllowedToDeleteRole.into(),
                        ("ac", "read") => Code::NotAllowedToReadRole.into(),
                        _ => Self::with_message(
                            Code::Forbidden,
                            format!("You are not allowed to access resource: {resource}"),
                        ),
                    },
                    Rule::InvalidRole(why) => Self::with_message(Code::InvalidRole, why),
                    Rule::UserNotFound => Code::UserNotFound.into(),
                    Rule::AlreadyMember => Code::AlreadyMember.into(),
                    Rule::MemberNotFound => Code::MemberNotFound.into(),
                    Rule::MembershipLimit => Code::MembershipLimit.into(),
                    Rule::LastOwner => Code::LastOwner.into(),
                    Rule::NoOwnerLeft => Code::NoOwnerLeft.into(),
                    Rule::SlugInUse => Code::OrganizationSlugTaken.into(),
                    Rule::SlugTaken => Code::OrganizationAlreadyExists.into(),
                    Rule::OrganizationLimit => Code::OrganizationLimit.into(),
                    Rule::InvitationNotFound => Code::InvitationNotFound.into(),
                    Rule::AlreadyInvited => Code::AlreadyInvited.into(),
                    Rule::NotRecipient => Code::NotRecipient.into(),
                    Rule::EmailNotVerified => Code::InvitationEmailNotVerified.into(),
                    Rule::TeamNotFound => Code::TeamNotFound.into(),
                    Rule::TeamExists => Code::TeamAlreadyExists.into(),
                    Rule::LastTeam => Code::LastTeam.into(),
                    Rule::RoleNotFound => Code::InvalidRole.into(),
                    Rule::RoleExists => Code::RoleAlreadyExists.into(),
                    Rule::RoleInUse => Code::RoleInUse.into(),
                    Rule::InviterGone => Code::InviterGone.into(),
                    Rule::InvalidToken => Code::InvalidToken.into(),
                    Rule::EmailTaken => Code::CouldntUpdateYourEmail.into(),
                    Rule::InvalidPassword => Code::InvalidPassword.into(),
                    Rule::UserExists => Code::UserAlreadyExists.into(),
                    Rule::InvalidRoleDefinition(why) => Self::validation(false, vec![why]),
                    Rule::UserGone => Code::FailedToCreateSession.into(),
                    Rule::AccountNotLinked => Code::OauthLinkError.into(),
                    Rule::SignUpDisabled => {
                        Self::with_message(Code::OauthLinkError, "signup disabled")
                    }
                    Rule::LinkingNotAllowed => Code::LinkingNotAllowed.into(),
                    Rule::EmailDoesNotMatch => Code::LinkingDifferentEmailsNotAllowed.into(),
                    Rule::AccountLinkedToOtherUser => Code::SocialAccountAlreadyLinked.into(),
                    Rule::InvitationLimit => Code::InvitationLimit.into(),
                    Rule::Banned => Code::BannedUser.into(),
                    Rule::NoSuchUser => Code::AdminUserNotFound.into(),
                    Rule::CannotBanYourself => Code::CannotBanYourself.into(),
                    Rule::CannotRemoveYourself => Code::CannotRemoveYourself.into(),
                    Rule::CannotImpersonateAdmins => Code::CannotImpersonateAdmins.into(),
                    Rule::NonExistentRole => Code::NonExistentRole.into(),
                    Rule::EmailInUse => Code::UserAlreadyExistsUseAnotherEmail.into(),
                    Rule::AdminNotAllowed(what) => {
                        use actors::AdminAction as A;
                        match what {
                            A::CreateUsers => Code::NotAllowedToCreateUsers,
                            A::ListUsers => Code::NotAllowedToListUsers,
                            A::SetRole => Code::NotAllowedToChangeUsersRole,
                            A::Ban => Code::NotAllowedToBanUsers,
                            A::Impersonate => Code::NotAllowedToImpersonateUsers,
                            A::DeleteUsers => Code::NotAllowedToDeleteUsers,
                            A::SetPassword => Code::NotAllowedToSetUsersPassword,
                            A::GetUser => Code::NotAllowedToGetUser,
                            A::UpdateUsers => Code::NotAllowedToUpdateUsers,
                            A::SetEmail => Code::NotAllowedToSetUsersEmail,
                            A::ListSessions => Code::NotAllowedToListUsersSessions,
                            A::RevokeSessions => Code::NotAllowedToRevokeUsersSessions,
                            A::ReadAuditLog => Code::NotAllowedToReadAuditLog,
                            A::ManageWebhooks => Code::NotAllowedToManageWebhooks,
                        }
                        .into()
                    }
                    Rule::Escalation(what) => {
                        use actors::Escalation as E;
                        match what {
                            E::CreateRole => Code::NotAllowedToCreateRole,
                            E::UpdateRole => Code::NotAllowedToUpdateRole,
                            E::UpdateMember => Code::NotAllowedToUpdateMember,
                            E::RemoveMember => Code::NotAllowedToDeleteMember,
                            E::AddMember | E::Invite => Code::NotAllowedToInviteWithRole,
                        }
                        .into()
                    }
                }
            }
            actors::ActorError::Unavailable(m) => {
                crate::metrics::count_store_error("unavailable");
                tracing::warn!(cause = %m, "dependency unavailable");
                Self::new(Code::ServiceUnavailable)
            }
            actors::ActorError::Overloaded => {
                tracing::warn!("too many requests waiting for one user or organization");
                Self::with_message(
                    Code::ServiceUnavailable,
                    "Too many requests for this account or organization at once; try again",
                )
            }
            other => Self::internal(other),
        }
    }
}

impl From<storage::StoreError> for ApiError {
    fn from(e: storage::StoreError) -> Self {
        match &e {
            storage::StoreError::Unavailable(_) => crate::metrics::count_store_error("unavailable"),
            storage::StoreError::Internal(_) => crate::metrics::count_store_error("internal"),
            _ => {}
        }
        actors::ActorError::from(e).into()
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.code(), self.message)
    }
}

impl std::error::Error for ApiError {}

impl poem::error::ResponseError for ApiError {
    fn status(&self) -> StatusCode {
        self.code.status()
    }

    fn as_response(&self) -> Response {
        let body = serde_json::to_vec(&self.body_json()).unwrap_or_default();
        let mut resp = Response::builder()
            .status(self.code.status())
            .content_type("application/json")
            .body(body);
        for c in &self.cookies {
            if let Ok(v) = poem::http::HeaderValue::from_str(c) {
                resp.headers_mut().append(poem::http::header::SET_COOKIE, v);
            }
        }
        if let Some(secs) = self.retry_after {
            resp.headers_mut().insert(
                poem::http::HeaderName::from_static("x-retry-after"),
                poem::http::HeaderValue::from(secs),
            );
        }
        resp
    }
}

impl ApiError {
    fn body_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({ "code": self.code.code(), "message": self.message });
        if let (Some(d), Some(obj)) = (&self.details, v.as_object_mut()) {
            obj.insert("details".into(), serde_json::json!(d));
        }
        v
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        poem::error::ResponseError::as_response(&self)
    }
}

impl ApiResponse for ApiError {
    fn meta() -> MetaResponses {
        let content = || {
            vec![MetaMediaType {
                content_type: "application/json; charset=utf-8",
                schema: <ErrorBody as poem_openapi::types::Type>::schema_ref(),
            }]
        };
        MetaResponses {
            responses: vec![
                MetaResponse {
                    description: "Client error: `{code, message}` (e.g. VALIDATION_ERROR, UNAUTHORIZED, INVALID_ORIGIN)",
                    status: None,
                    status_range: Some("4XX".into()),
                    content: content(),
                    headers: vec![],
                },
                MetaResponse {
                    description: "Server error: `{code, message}`; the cause is logged, never sent",
                    status: None,
                    status_range: Some("5XX".into()),
                    content: content(),
                    headers: vec![],
                },
            ],
        }
    }

    fn register(registry: &mut Registry) {
        <ErrorBody as poem_openapi::types::Type>::register(registry);
    }
}

/// The request an error answers, as far as the error body needs it.
pub struct Asked<'a> {
    pub method: &'a str,
    pub path: &'a str,
    /// The body as read (`None` for a bodiless GET).
    pub body: Option<&'a [u8]>,
}

/// Maps every error poem or poem-openapi raise before a handler runs (parse failures, unknown
/// routes, size limits) onto the wire error, so no client input yields a non-JSON error or 500.
pub fn from_poem_error(err: &poem::Error, asked: &Asked<'_>) -> ApiError {
    use poem_openapi::error::{ContentTypeError, ParseParamError, ParseRequestPayloadError};
    if let Some(e) = err.downcast_ref::<ApiError>() {
        return e.clone();
    }
    let route = asked.path.strip_prefix(crate::BASE_PATH);
    if let Some(e) = err.downcast_ref::<ParseRequestPayloadError>() {
        // A body that does not fit: which field and why, not only what was expected.
        let fields = asked.body.zip(route).and_then(|(body, route)| {
            crate::payload_errors::field_errors(asked.method, route, body)
        });
        return ApiError::validation(false, fields.unwrap_or_else(|| vec![e.reason.clone()]));
    }
    if let Some(e) = err.downcast_ref::<ParseParamError>() {
        return ApiError::validation(true, vec![format!("{}: {}", e.name, e.reason)]);
    }
    if err.downcast_ref::<ContentTypeError>().is_some() {
        return ApiError::new(Code::UnsupportedMediaType);
    }
    match err.status() {
        StatusCode::NOT_FOUND => ApiError::new(Code::NotFound),
        // A route asked with another method answers as an unknown route, as 1.7 does (its
        // POST get-session has its own 405).
        StatusCode::METHOD_NOT_ALLOWED if route == Some("/get-session") => {
            ApiError::new(Code::MethodNotAllowedDeferSessionRequired)
        }
        StatusCode::METHOD_NOT_ALLOWED => ApiError::new(Code::NotFound),
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(Code::PayloadTooLarge),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::new(Code::UnsupportedMediaType),
        s if s.is_client_error() => ApiError::validation(false, vec![err.to_string()]),
        _ => ApiError::internal(err),
    }
}
