//! Wire shapes (camelCase JSON, as better-auth answers), converted from storage records.
use chrono::{DateTime, SecondsFormat, Utc};
use poem_openapi::Object;
use serde::Serialize;
use storage::{Session, User};

/// The signed-in caller.
#[derive(Debug, Clone)]
pub struct Authed {
    pub session: Session,
    pub user: User,
}

/// ISO 8601 with milliseconds and `Z`, as JavaScript's `Date.toJSON()` writes it.
pub fn iso(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

#[derive(Debug, Clone, Object, Serialize)]
#[oai(rename = "User", rename_all = "camelCase")]
#[serde(rename_all = "camelCase")]
pub struct UserDto {
    pub id: String,
    pub email: String,
    pub name: String,
    pub image: Option<String>,
    pub email_verified: bool,
    /// ISO 8601 date-time.
    pub created_at: String,
    /// ISO 8601 date-time.
    pub updated_at: String,
    /// Global (admin plugin) role; `user` unless set.
    pub role: String,
    pub banned: bool,
    pub ban_reason: Option<String>,
    /// ISO 8601 date-time.
    pub ban_expires: Option<String>,
    /// Two-factor plugin: a second factor is asked at sign-in.
    pub two_factor_enabled: bool,
}

impl From<&User> for UserDto {
    fn from(u: &User) -> Self {
        Self {
            id: u.id.0.clone(),
            email: u.email.clone(),
            name: u.name.clone(),
            image: u.image.clone(),
            email_verified: u.email_verified,
            created_at: iso(&u.created_at),
            updated_at: iso(&u.updated_at),
            role: u.role.clone().unwrap_or_else(|| "user".into()),
            banned: u.banned,
            ban_reason: u.ban_reason.clone(),
            ban_expires: u.ban_expires.as_ref().map(iso),
            two_factor_enabled: u.two_factor_enabled,
        }
    }
}

#[derive(Debug, Clone, Object, Serialize)]
#[oai(rename = "Session", rename_all = "camelCase")]
#[serde(rename_all = "camelCase")]
pub struct SessionDto {
    pub id: String,
    pub token: String,
    pub user_id: String,
    /// ISO 8601 date-time.
    pub expires_at: String,
    pub ip_address: Option<String>,
    pub user_agent: Option<String>,
    /// ISO 8601 date-time.
    pub created_at: String,
    /// ISO 8601 date-time.
    pub updated_at: String,
    pub active_organization_id: Option<String>,
    pub active_team_id: Option<String>,
    pub impersonated_by: Option<String>,
}

impl From<&Session> for SessionDto {
    fn from(s: &Session) -> Self {
        Self {
            id: s.id.0.clone(),
            token: s.token.clone(),
            user_id: s.user_id.0.clone(),
            expires_at: iso(&s.expires_at),
            ip_address: s.ip_address.clone(),
            user_agent: s.user_agent.clone(),
            created_at: iso(&s.created_at),
            updated_at: iso(&s.updated_at),
            active_organization_id: s.active_organization_id.as_ref().map(|x| x.0.clone()),
            active_team_id: s.active_team_id.as_ref().map(|x| x.0.clone()),
            impersonated_by: s.impersonated_by.as_ref().map(|x| x.0.clone()),
        }
    }
}

#[derive(Debug, Clone, Object, Serialize)]
#[oai(rename = "SessionWithUser")]
pub struct SessionWithUser {
    pub session: SessionDto,
    pub user: UserDto,
}

impl SessionWithUser {
    pub fn of(a: &Authed) -> Self {
        Self {
            session: SessionDto::from(&a.session),
            user: UserDto::from(&a.user),
        }
    }
}

#[derive(Debug, Clone, Object)]
#[oai(rename = "StatusResponse")]
pub struct StatusResponse {
    pub status: bool,
}

#[derive(Debug, Clone, Object)]
#[oai(rename = "SuccessResponse")]
pub struct SuccessResponse {
    pub success: bool,
}

/// A JSON string, strictly: unlike poem-openapi's `String`, a number or boolean is refused
/// (better-auth's validation answers `VALIDATION_ERROR` for `"password": 5`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text(pub String);

impl poem_openapi::types::Type for Text {
    const IS_REQUIRED: bool = true;
    type RawValueType = String;
    type RawElementValueType = String;

    fn name() -> std::borrow::Cow<'static, str> {
        String::name()
    }
    fn schema_ref() -> poem_openapi::registry::MetaSchemaRef {
        String::schema_ref()
    }
    fn as_raw_value(&self) -> Option<&String> {
        Some(&self.0)
    }
    fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a String> + 'a> {
        Box::new(std::iter::once(&self.0))
    }
}

impl poem_openapi::types::ParseFromJSON for Text {
    fn parse_from_json(value: Option<serde_json::Value>) -> poem_openapi::types::ParseResult<Self> {
        match value {
            Some(serde_json::Value::String(s)) => Ok(Text(s)),
            other => Err(poem_openapi::types::ParseError::expected_type(
                other.unwrap_or_default(),
            )),
        }
    }
}

impl poem_openapi::types::ToJSON for Text {
    fn to_json(&self) -> Option<serde_json::Value> {
        Some(serde_json::Value::String(self.0.clone()))
    }
}

/// A value or `null`: documented as nullable (poem-openapi documents `Option<T>` as `T`),
/// for answers that are `null` when there is nothing (get-session, set-active…).
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct Nullable<T>(pub Option<T>);

impl<T: poem_openapi::types::Type> poem_openapi::types::Type for Nullable<T> {
    const IS_REQUIRED: bool = false;
    type RawValueType = T::RawValueType;
    type RawElementValueType = T::RawElementValueType;

    fn name() -> std::borrow::Cow<'static, str> {
        format!("Nullable<{}>", T::name()).into()
    }
    fn schema_ref() -> poem_openapi::registry::MetaSchemaRef {
        use poem_openapi::registry::{MetaSchema, MetaSchemaRef};
        MetaSchemaRef::Inline(Box::new(MetaSchema {
            nullable: true,
            all_of: vec![T::schema_ref()],
            ..MetaSchema::ANY
        }))
    }
    fn register(registry: &mut poem_openapi::registry::Registry) {
        T::register(registry);
    }
    fn as_raw_value(&self) -> Option<&Self::RawValueType> {
        self.0.as_ref().and_then(|v| v.as_raw_value())
    }
    fn raw_element_iter<'a>(
        &'a self,
    ) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
        match &self.0 {
            Some(v) => v.raw_element_iter(),
            None => Box::new(std::iter::empty()),
        }
    }
}

impl<T: poem_openapi::types::ToJSON> poem_openapi::types::ToJSON for Nullable<T> {
    fn to_json(&self) -> Option<serde_json::Value> {
        match &self.0 {
            Some(v) => v.to_json(),
            None => Some(serde_json::Value::Null),
        }
    }
}

/// A JSON answer written by serde straight from the DTO, documented as `T` like poem-openapi's
/// `Json<T>` — which first builds the whole answer as a `serde_json::Value` (a map and a string
/// per field, then freed): a tenth of get-session's time. For the answers read most often;
/// their DTOs derive `Serialize` with the same names as their `Object` derive. Debug builds
/// (every test) check each answer against what `Json<T>` would have written. Written once, an
/// answer can be served again as it is ([`JsonBytes::written`]): get-session for a cookie
/// verified before ([`crate::session::VerifiedCookies`]), an organization read from the view
/// cache (`actors::Answers`).
#[derive(Debug, Clone)]
pub struct JsonBytes<T> {
    body: bytes::Bytes,
    of: std::marker::PhantomData<fn() -> T>,
}

impl<T: Serialize + poem_openapi::types::ToJSON> JsonBytes<T> {
    /// `value`, written (a DTO of strings, numbers and booleans cannot fail to be).
    pub fn new(value: &T) -> Self {
        debug_assert_eq!(
            serde_json::to_value(value).ok(),
            value.to_json(),
            "serde and poem-openapi write this answer differently"
        );
        Self::written(serde_json::to_vec(value).unwrap_or_default().into())
    }
}

impl<T> JsonBytes<T> {
    /// An answer written by [`JsonBytes::new`] before.
    pub fn written(body: bytes::Bytes) -> Self {
        Self {
            body,
            of: std::marker::PhantomData,
        }
    }

    pub fn bytes(&self) -> &bytes::Bytes {
        &self.body
    }
}

impl<T: poem_openapi::types::Type> poem_openapi::payload::Payload for JsonBytes<T> {
    const CONTENT_TYPE: &'static str = "application/json; charset=utf-8";

    fn schema_ref() -> poem_openapi::registry::MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut poem_openapi::registry::Registry) {
        T::register(registry);
    }
}

impl<T: Send> poem::IntoResponse for JsonBytes<T> {
    fn into_response(self) -> poem::Response {
        poem::Response::builder()
            .content_type("application/json; charset=utf-8")
            .body(self.body)
    }
}

impl<T: poem_openapi::types::Type + Serialize + poem_openapi::types::ToJSON + Send>
    poem_openapi::ApiResponse for JsonBytes<T>
{
    fn meta() -> poem_openapi::registry::MetaResponses {
        poem_openapi::payload::Json::<T>::meta()
    }

    fn register(registry: &mut poem_openapi::registry::Registry) {
        T::register(registry);
    }
}
