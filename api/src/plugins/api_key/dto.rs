//! The api-key plugin's bodies and answers, as @better-auth/api-key 1.7 writes them.
use crate::dto::iso;
use crate::error::{ApiError, ApiResult, Code};
use poem_openapi::types::MaybeUndefined;
use poem_openapi::Object;
use std::collections::BTreeMap;
use storage::ApiKey;

/// `{resource: [action, …]}`.
pub type PermissionMap = BTreeMap<String, Vec<String>>;

/// An API key as listed: never the key itself, its first characters (`start`) instead.
#[derive(Debug, Clone, Object)]
#[oai(rename = "ApiKey", rename_all = "camelCase")]
pub struct ApiKeyDto {
    pub id: String,
    /// `default`.
    pub config_id: String,
    pub name: Option<String>,
    /// The key's first characters, to tell keys apart.
    pub start: Option<String>,
    pub prefix: Option<String>,
    /// The owner: the organization's id for an organization's key, else the user's.
    pub reference_id: String,
    /// An organization's key: who made it (whom it acts as). A Gatehouse addition.
    #[oai(skip_serializing_if_is_none)]
    pub user_id: Option<String>,
    /// The owning organization, if any. A Gatehouse addition.
    #[oai(skip_serializing_if_is_none)]
    pub organization_id: Option<String>,
    /// Milliseconds between refills of `remaining`.
    pub refill_interval: Option<i64>,
    pub refill_amount: Option<i64>,
    pub last_refill_at: Option<String>,
    pub enabled: bool,
    pub rate_limit_enabled: bool,
    /// Milliseconds.
    pub rate_limit_time_window: Option<i64>,
    pub rate_limit_max: Option<i64>,
    /// Requests in the current rate-limit window.
    pub request_count: i64,
    /// Uses left (`null`: unlimited).
    pub remaining: Option<i64>,
    pub last_request: Option<String>,
    pub expires_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub permissions: Option<PermissionMap>,
    pub metadata: Option<serde_json::Value>,
}

impl From<&ApiKey> for ApiKeyDto {
    fn from(k: &ApiKey) -> Self {
        Self {
            id: k.id.0.clone(),
            config_id: k.config_id.clone(),
            name: k.name.clone(),
            start: k.start.clone(),
            prefix: k.prefix.clone(),
            reference_id: k.reference_id().to_owned(),
            user_id: k.organization_id.as_ref().map(|_| k.user_id.0.clone()),
            organization_id: k.organization_id.as_ref().map(|o| o.0.clone()),
            refill_interval: k.refill_interval,
            refill_amount: k.refill_amount,
            last_refill_at: k.last_refill_at.as_ref().map(iso),
            enabled: k.enabled,
            rate_limit_enabled: k.rate_limit_enabled,
            rate_limit_time_window: k.rate_limit_time_window,
            rate_limit_max: k.rate_limit_max,
            request_count: k.request_count,
            remaining: k.remaining,
            last_request: k.last_request.as_ref().map(iso),
            expires_at: k.expires_at.as_ref().map(iso),
            created_at: iso(&k.created_at),
            updated_at: iso(&k.updated_at),
            permissions: k
                .permissions
                .as_deref()
                .and_then(|p| serde_json::from_str(p).ok()),
            metadata: k
                .metadata
                .as_deref()
                .and_then(|m| serde_json::from_str(m).ok()),
        }
    }
}

/// A new key: the key in full (shown this once) and its record.
#[derive(Debug, Object)]
#[oai(rename = "CreatedApiKey", rename_all = "camelCase")]
pub struct CreatedApiKey {
    /// The key: send it in the `x-api-key` header. It is not stored and cannot be shown
    /// again.
    pub key: String,
    #[oai(flatten)]
    pub record: ApiKeyDto,
}

#[derive(Debug, Object)]
#[oai(rename = "CreateApiKeyBody", rename_all = "camelCase")]
pub struct CreateBody {
    /// 1–32 characters.
    pub name: Option<String>,
    /// Seconds until the key stops working (1–365 days); `null` or absent: never.
    pub expires_in: MaybeUndefined<i64>,
    /// Letters, digits, `_` and `-`, put before the random part.
    pub prefix: Option<String>,
    /// An object kept with the key (when `api_key.enable_metadata` is on).
    pub metadata: MaybeUndefined<serde_json::Value>,
    /// An organization the key belongs to: it acts there only (members allowed
    /// `apiKey:create`).
    pub organization_id: Option<String>,
    /// The key's permissions. From a session: an organization's key only, within the
    /// maker's; any with the server key.
    pub permissions: Option<PermissionMap>,
    /// Server key only: uses allowed (`null`: unlimited).
    pub remaining: MaybeUndefined<i64>,
    /// Server key only: `remaining` is set back to this every `refillInterval` ms.
    pub refill_amount: Option<i64>,
    pub refill_interval: Option<i64>,
    /// Server key only: the key's rate limit.
    pub rate_limit_enabled: Option<bool>,
    pub rate_limit_time_window: Option<i64>,
    pub rate_limit_max: Option<i64>,
    /// Server key only: the user the key is made for (without a session).
    pub user_id: Option<String>,
    /// better-auth's configuration id; only `default` is known here.
    pub config_id: Option<String>,
}

impl CreateBody {
    /// Whether a field only the server may set is set.
    pub fn sets_server_only(&self) -> bool {
        self.refill_amount.is_some()
            || self.refill_interval.is_some()
            || self.rate_limit_enabled.is_some()
            || self.rate_limit_time_window.is_some()
            || self.rate_limit_max.is_some()
            || self.remaining.value().is_some()
    }
}

#[derive(Debug, Object)]
#[oai(rename = "UpdateApiKeyBody", rename_all = "camelCase")]
pub struct UpdateBody {
    pub key_id: String,
    pub name: Option<String>,
    pub enabled: Option<bool>,
    /// Seconds from now; `null`: never expires.
    pub expires_in: MaybeUndefined<i64>,
    pub metadata: MaybeUndefined<serde_json::Value>,
    /// Server key only.
    pub remaining: MaybeUndefined<i64>,
    pub refill_amount: Option<i64>,
    pub refill_interval: Option<i64>,
    pub rate_limit_enabled: Option<bool>,
    pub rate_limit_time_window: Option<i64>,
    pub rate_limit_max: Option<i64>,
    pub permissions: Option<PermissionMap>,
    /// Server key only: the key's maker (without a session).
    pub user_id: Option<String>,
    pub config_id: Option<String>,
}

impl UpdateBody {
    pub fn sets_server_only(&self) -> bool {
        self.refill_amount.is_some()
            || self.refill_interval.is_some()
            || self.rate_limit_enabled.is_some()
            || self.rate_limit_time_window.is_some()
            || self.rate_limit_max.is_some()
            || !self.remaining.is_undefined()
            || self.permissions.is_some()
    }
}

#[derive(Debug, Object)]
#[oai(rename = "DeleteApiKeyBody", rename_all = "camelCase")]
pub struct KeyIdBody {
    pub key_id: String,
    pub config_id: Option<String>,
}

#[derive(Debug, Object)]
#[oai(rename = "ApiKeyList", rename_all = "camelCase")]
pub struct ApiKeyList {
    pub api_keys: Vec<ApiKeyDto>,
    /// Keys before paging.
    pub total: usize,
    #[oai(skip_serializing_if_is_none)]
    pub limit: Option<usize>,
    #[oai(skip_serializing_if_is_none)]
    pub offset: Option<usize>,
}

#[derive(Debug, Object)]
#[oai(rename = "VerifyApiKeyBody", rename_all = "camelCase")]
pub struct VerifyBody {
    pub key: String,
    /// Every listed permission must be the key's.
    pub permissions: Option<PermissionMap>,
    pub config_id: Option<String>,
}

#[derive(Debug, Object)]
#[oai(rename = "ApiKeyError")]
pub struct VerifyError {
    pub message: String,
    pub code: String,
}

#[derive(Debug, Object)]
#[oai(rename = "VerifiedApiKey")]
pub struct Verified {
    pub valid: bool,
    pub error: Option<VerifyError>,
    pub key: Option<ApiKeyDto>,
}

#[derive(Debug, Object)]
#[oai(rename = "DeletedExpiredApiKeys")]
pub struct DeletedExpired {
    pub success: bool,
    pub error: Option<String>,
    /// How many keys went. A Gatehouse addition.
    pub deleted: u64,
}

/// Permissions as the policy takes them.
pub fn permissions_of(p: &PermissionMap) -> policy::Permissions {
    p.iter()
        .map(|(r, a)| (r.clone(), a.iter().cloned().collect()))
        .collect()
}

/// An organization key's permissions: each resource and action known to the policy.
pub fn org_permissions_of(p: &PermissionMap) -> ApiResult<policy::Permissions> {
    let perms = permissions_of(p);
    policy::validate_permissions(&perms)
        .map_err(|e| ApiError::validation(false, vec![format!("permissions: {e}")]))?;
    Ok(perms)
}

/// The metadata to store: an object, as JSON text.
pub fn metadata_text(v: &serde_json::Value) -> ApiResult<String> {
    if !v.is_object() {
        return Err(Code::InvalidMetadataType.into());
    }
    serde_json::to_string(v).map_err(|_| Code::InvalidMetadataType.into())
}
