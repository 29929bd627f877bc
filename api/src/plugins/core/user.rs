//! The signed-in user's profile.
use crate::dto::StatusResponse;
use crate::error::{ApiError, ApiResult, Code};
use crate::plugins::Tag;
use crate::session::Principal;
use crate::AppState;
use actors::UserPatch;
use poem::web::Data;
use poem_openapi::payload::Json;
use poem_openapi::registry::{MetaSchemaRef, Registry};
use poem_openapi::types::{ParseError, ParseFromJSON, ParseResult, Type};
use poem_openapi::{Object, OpenApi};
use std::borrow::Cow;

pub struct UserApi;

/// The documented shape of the update-user body.
#[derive(Debug, Object)]
#[oai(rename = "UpdateUserBody")]
struct UpdateUserFields {
    /// The display name; at most 256 characters.
    #[oai(validator(max_length = 256))]
    name: Option<String>,
    /// An image URL (at most 2048 characters), or `null` to remove it.
    #[oai(validator(max_length = 2048))]
    image: Option<String>,
}

/// The parsed update-user body. Parsed by hand so that a field the caller may not set here
/// (`email`, `role`, …) gets its own clear error instead of being ignored.
#[derive(Debug)]
struct UpdateUserBody {
    name: Option<String>,
    image: Option<Option<String>>,
    /// The first field that is not allowed, if any.
    refused: Option<String>,
}

impl Type for UpdateUserBody {
    const IS_REQUIRED: bool = true;
    type RawValueType = Self;
    type RawElementValueType = Self;

    fn name() -> Cow<'static, str> {
        UpdateUserFields::name()
    }
    fn schema_ref() -> MetaSchemaRef {
        UpdateUserFields::schema_ref()
    }
    fn register(registry: &mut Registry) {
        UpdateUserFields::register(registry)
    }
    fn as_raw_value(&self) -> Option<&Self> {
        Some(self)
    }
    fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a Self> + 'a> {
        Box::new(self.as_raw_value().into_iter())
    }
}

impl ParseFromJSON for UpdateUserBody {
    fn parse_from_json(value: Option<serde_json::Value>) -> ParseResult<Self> {
        let Some(serde_json::Value::Object(map)) = value else {
            return Err(ParseError::custom("expected an object"));
        };
        let mut body = UpdateUserBody {
            name: None,
            image: None,
            refused: None,
        };
        for (key, v) in map {
            match (key.as_str(), v) {
                ("name", serde_json::Value::String(s)) if s.chars().count() > 256 => {
                    return Err(ParseError::custom("name: at most 256 characters"))
                }
                ("name", serde_json::Value::String(s)) => body.name = Some(s),
                ("image", serde_json::Value::String(s)) if s.chars().count() > 2048 => {
                    return Err(ParseError::custom("image: at most 2048 characters"))
                }
                ("name", _) => return Err(ParseError::custom("name: expected a string")),
                ("image", serde_json::Value::String(s)) => body.image = Some(Some(s)),
                ("image", serde_json::Value::Null) => body.image = Some(None),
                ("image", _) => return Err(ParseError::custom("image: expected a string or null")),
                _ => {
                    if body.refused.is_none() || key == "email" {
                        body.refused = Some(key);
                    }
                }
            }
        }
        Ok(body)
    }
}

#[OpenApi(tag = "Tag::User")]
impl UserApi {
    /// Update the caller's profile
    ///
    /// Sets `name` and/or `image`. `email` cannot be changed here (400
    /// `EMAIL_CAN_NOT_BE_UPDATED`; use change-email), nor can any other field (400
    /// `FIELD_NOT_ALLOWED`); an empty body answers 400 `NO_FIELDS_TO_UPDATE`.
    #[oai(path = "/update-user", method = "post", operation_id = "updateUser")]
    async fn update_user(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        body: Json<UpdateUserBody>,
    ) -> ApiResult<Json<StatusResponse>> {
        let body = body.0;
        match body.refused.as_deref() {
            Some("email") => return Err(Code::EmailCanNotBeUpdated.into()),
            Some(field) => {
                return Err(ApiError::with_message(
                    Code::FieldNotAllowed,
                    format!("{field} is not allowed to be set"),
                ))
            }
            None => {}
        }
        if body.name.is_none() && body.image.is_none() {
            return Err(Code::NoFieldsToUpdate.into());
        }
        let user = state
            .actors
            .user(auth.user.id.clone())
            .update_user(UserPatch {
                name: body.name,
                image: body.image,
                ..UserPatch::default()
            })
            .await?;
        // As 1.7: the session's cookies are re-issued, with the changed user in the cache.
        state
            .sessions
            .reissue_session(&auth, &user, Some(auth.session.clone()));
        Ok(Json(StatusResponse { status: true }))
    }
}
