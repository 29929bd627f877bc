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
    match iso_fixed(t) {
        Some(b) => String::from_utf8_lossy(&b).into_owned(),
        None => t.to_rfc3339_opts(SecondsFormat::Millis, true),
    }
}

/// [`iso`]'s text for years 0–9 999 (`YYYY-MM-DDTHH:MM:SS.mmmZ`, ASCII), written without
/// chrono's formatter; `None` for other years, which chrono writes with a sign and more
/// digits. A leap second's nanoseconds (≥ 1 s) read as chrono writes them: 60 seconds.
fn iso_fixed(t: &DateTime<Utc>) -> Option<[u8; 24]> {
    use chrono::{Datelike, Timelike};
    let year = u32::try_from(t.year()).ok().filter(|y| *y <= 9999)?;
    let (sec, nanos) = match t.nanosecond() {
        n if n >= 1_000_000_000 => (60, n - 1_000_000_000),
        n => (t.second(), n),
    };
    let mut b = *b"0000-00-00T00:00:00.000Z";
    let mut put = |at: usize, width: usize, mut v: u32| {
        for i in (at..at + width).rev() {
            b[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, 4, year);
    put(5, 2, t.month());
    put(8, 2, t.day());
    put(11, 2, t.hour());
    put(14, 2, t.minute());
    put(17, 2, sec);
    put(20, 3, nanos / 1_000_000);
    Some(b)
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

    /// get-session's answer for `a`, written straight from the session and the user: the
    /// same bytes as [`JsonBytes::new`] of [`SessionWithUser::of`] (debug builds check it),
    /// without copying each field into a DTO and each time into a string first.
    pub fn answer(a: &Authed) -> JsonBytes<Nullable<SessionWithUser>> {
        let body = serde_json::to_vec(&Borrowed(a)).unwrap_or_default();
        debug_assert_eq!(
            String::from_utf8_lossy(&body),
            String::from_utf8_lossy(JsonBytes::new(&Nullable(Some(Self::of(a)))).bytes()),
            "get-session's answer written from the entities differs from its DTO's"
        );
        JsonBytes::written(body.into())
    }
}

/// `{session, user}` as [`SessionWithUser`] writes it, borrowed from the entities.
struct Borrowed<'a>(&'a Authed);

impl Serialize for Borrowed<'_> {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let (s, u) = (&self.0.session, &self.0.user);
        let mut out = ser.serialize_struct("SessionWithUser", 2)?;
        out.serialize_field("session", &SessionFields(s))?;
        out.serialize_field("user", &UserFields(u))?;
        out.end()
    }
}

/// [`SessionDto`]'s fields, in its order.
struct SessionFields<'a>(&'a Session);

impl Serialize for SessionFields<'_> {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let s = self.0;
        let mut out = ser.serialize_struct("Session", 11)?;
        out.serialize_field("id", &s.id.0)?;
        out.serialize_field("token", &s.token)?;
        out.serialize_field("userId", &s.user_id.0)?;
        out.serialize_field("expiresAt", &Iso(&s.expires_at))?;
        out.serialize_field("ipAddress", &s.ip_address)?;
        out.serialize_field("userAgent", &s.user_agent)?;
        out.serialize_field("createdAt", &Iso(&s.created_at))?;
        out.serialize_field("updatedAt", &Iso(&s.updated_at))?;
        out.serialize_field(
            "activeOrganizationId",
            &s.active_organization_id.as_ref().map(|x| &x.0),
        )?;
        out.serialize_field("activeTeamId", &s.active_team_id.as_ref().map(|x| &x.0))?;
        out.serialize_field("impersonatedBy", &s.impersonated_by.as_ref().map(|x| &x.0))?;
        out.end()
    }
}

/// [`UserDto`]'s fields, in its order.
struct UserFields<'a>(&'a User);

impl Serialize for UserFields<'_> {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let u = self.0;
        let mut out = ser.serialize_struct("User", 12)?;
        out.serialize_field("id", &u.id.0)?;
        out.serialize_field("email", &u.email)?;
        out.serialize_field("name", &u.name)?;
        out.serialize_field("image", &u.image)?;
        out.serialize_field("emailVerified", &u.email_verified)?;
        out.serialize_field("createdAt", &Iso(&u.created_at))?;
        out.serialize_field("updatedAt", &Iso(&u.updated_at))?;
        out.serialize_field("role", u.role.as_deref().unwrap_or("user"))?;
        out.serialize_field("banned", &u.banned)?;
        out.serialize_field("banReason", &u.ban_reason)?;
        out.serialize_field("banExpires", &u.ban_expires.as_ref().map(Iso))?;
        out.serialize_field("twoFactorEnabled", &u.two_factor_enabled)?;
        out.end()
    }
}

/// A time written as [`iso`] writes it, without a string of its own in between.
struct Iso<'a>(&'a DateTime<Utc>);

impl Serialize for Iso<'_> {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        match iso_fixed(self.0) {
            // ASCII digits and separators only.
            Some(b) => {
                ser.serialize_str(std::str::from_utf8(&b).map_err(serde::ser::Error::custom)?)
            }
            None => ser.serialize_str(&iso(self.0)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use storage::{OrgId, SessionId, TeamId, UserId};

    fn authed(at: DateTime<Utc>, full: bool) -> Authed {
        let some = |v: &str| full.then(|| v.to_owned());
        let mut user = User::new("A\"b\\c@example.com", "Zoë \u{1}\n".into(), some("i"), at);
        user.role = some("admin,user");
        user.banned = full;
        user.ban_reason = some("spam \"quoted\"");
        user.ban_expires = full.then_some(at + chrono::Duration::milliseconds(1));
        user.two_factor_enabled = full;
        user.email_verified = full;
        let session = Session {
            id: SessionId("s1".into()),
            token: "tok".into(),
            user_id: user.id.clone(),
            expires_at: at + chrono::Duration::days(7),
            ip_address: some("203.0.113.9"),
            user_agent: some("Mozilla/5.0 \u{2028}"),
            created_at: at,
            updated_at: at,
            active_organization_id: full.then(|| OrgId("o".into())),
            active_team_id: full.then(|| TeamId("t".into())),
            impersonated_by: full.then(|| UserId("u".into())),
        };
        Authed { session, user }
    }

    /// get-session's answer written from the entities is, byte for byte, the DTO's, and times
    /// are written as chrono writes them: with every optional field absent and present, strings
    /// that need escaping, and times at the edges of their digits (a leap second, millisecond
    /// 0 and 999, years 1 and 9999, and past 9999).
    #[test]
    fn the_borrowed_session_answer_is_the_dtos() {
        let leap = chrono::NaiveDate::from_ymd_opt(2016, 12, 31)
            .and_then(|d| d.and_hms_milli_opt(23, 59, 59, 1_500))
            .map(|t| t.and_utc());
        let times = [
            Utc.with_ymd_and_hms(2026, 11, 28, 9, 5, 7).single(),
            Utc.timestamp_millis_opt(1_764_322_799_999).single(),
            Utc.with_ymd_and_hms(1, 1, 1, 0, 0, 0).single(),
            Utc.with_ymd_and_hms(9999, 12, 31, 23, 59, 59).single(),
            Utc.with_ymd_and_hms(10_000, 1, 1, 0, 0, 0).single(),
            leap,
        ];
        for at in times {
            let at = at.expect("a valid time");
            assert_eq!(
                iso(&at),
                at.to_rfc3339_opts(SecondsFormat::Millis, true),
                "as chrono writes {at:?}"
            );
            for full in [false, true] {
                let a = authed(at, full);
                let dto = JsonBytes::new(&Nullable(Some(SessionWithUser::of(&a))));
                let borrowed = SessionWithUser::answer(&a);
                assert_eq!(
                    String::from_utf8_lossy(borrowed.bytes()),
                    String::from_utf8_lossy(dto.bytes()),
                    "at {at:?}, optional fields present: {full}"
                );
            }
        }
    }
}
