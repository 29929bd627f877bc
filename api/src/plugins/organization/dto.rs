//! Wire shapes of organizations, members and invitations (camelCase, as better-auth answers),
//! converted from storage records; and the role input (a role or a list of roles).
use crate::dto::{iso, Text};
use poem_openapi::Object;
use serde::Serialize;
use storage::{Invitation, Organization};

#[derive(Debug, Clone, Object, Serialize)]
#[oai(rename = "Organization", rename_all = "camelCase")]
#[serde(rename_all = "camelCase")]
pub struct OrganizationDto {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) slug: String,
    pub(crate) logo: Option<String>,
    /// The organization's metadata, or `null`: the object on create and update, the stored JSON
    /// text on list, set-active, get-full-organization and delete (as better-auth answers).
    pub(crate) metadata: Option<serde_json::Value>,
    pub(crate) created_at: String,
}

impl From<&Organization> for OrganizationDto {
    fn from(o: &Organization) -> Self {
        Self {
            id: o.id.0.clone(),
            name: o.name.clone(),
            slug: o.slug.clone(),
            logo: o.logo.clone(),
            metadata: o
                .metadata
                .as_deref()
                .and_then(|m| serde_json::from_str(m).ok()),
            created_at: iso(&o.created_at),
        }
    }
}

impl OrganizationDto {
    /// As the routes that read the organization back answer it: metadata as the stored text.
    pub(crate) fn stored(o: &Organization) -> Self {
        Self {
            metadata: o.metadata.clone().map(serde_json::Value::String),
            ..Self::from(o)
        }
    }
}

#[derive(Debug, Clone, Object, Serialize)]
#[oai(rename = "MemberUser")]
pub(crate) struct MemberUserDto {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) email: String,
    pub(crate) image: Option<String>,
}

#[derive(Debug, Clone, Object, Serialize)]
#[oai(rename = "Member", rename_all = "camelCase")]
#[serde(rename_all = "camelCase")]
pub(crate) struct MemberDto {
    pub(crate) id: String,
    pub(crate) organization_id: String,
    pub(crate) user_id: String,
    /// One or several comma-separated roles.
    pub(crate) role: String,
    pub(crate) team_id: Option<String>,
    pub(crate) created_at: String,
    pub(crate) user: Option<MemberUserDto>,
}

#[derive(Debug, Object, Serialize)]
#[oai(rename = "OrganizationWithMembers")]
pub(crate) struct OrganizationWithMembers {
    #[oai(flatten)]
    #[serde(flatten)]
    pub(crate) organization: OrganizationDto,
    pub(crate) members: Vec<MemberDto>,
}

#[derive(Debug, Clone, Object, Serialize)]
#[oai(rename = "FullOrganization")]
pub(crate) struct FullOrganization {
    #[oai(flatten)]
    #[serde(flatten)]
    pub(crate) organization: OrganizationDto,
    pub(crate) members: Vec<MemberDto>,
    pub(crate) invitations: Vec<InvitationDto>,
    pub(crate) teams: Vec<TeamWithCount>,
}

/// A team as get-full-organization lists it: with how many members it has (as 1.7).
#[derive(Debug, Clone, Object, Serialize)]
#[oai(rename = "TeamWithMemberCount", rename_all = "camelCase")]
#[serde(rename_all = "camelCase")]
pub(crate) struct TeamWithCount {
    #[oai(flatten)]
    #[serde(flatten)]
    pub(crate) team: crate::plugins::TeamDto,
    pub(crate) member_count: u32,
}

#[derive(Debug, Clone, Object, Serialize)]
#[oai(rename = "Invitation", rename_all = "camelCase")]
#[serde(rename_all = "camelCase")]
pub(crate) struct InvitationDto {
    pub(crate) id: String,
    pub(crate) organization_id: String,
    pub(crate) email: String,
    pub(crate) role: String,
    /// pending, accepted, rejected or canceled.
    pub(crate) status: String,
    pub(crate) team_id: Option<String>,
    pub(crate) inviter_id: String,
    pub(crate) expires_at: String,
    pub(crate) created_at: String,
}

impl From<&Invitation> for InvitationDto {
    fn from(i: &Invitation) -> Self {
        Self {
            id: i.id.0.clone(),
            organization_id: i.organization_id.0.clone(),
            email: i.email.clone(),
            role: i.role.clone(),
            status: i.status.as_str().to_owned(),
            team_id: i.team_id.as_ref().map(|t| t.0.clone()),
            inviter_id: i.inviter_id.0.clone(),
            expires_at: iso(&i.expires_at),
            created_at: iso(&i.created_at),
        }
    }
}

#[derive(Debug, Object, Serialize)]
#[oai(rename = "InvitationDetails", rename_all = "camelCase")]
#[serde(rename_all = "camelCase")]
pub(crate) struct InvitationDetails {
    #[oai(flatten)]
    #[serde(flatten)]
    pub(crate) invitation: InvitationDto,
    pub(crate) organization_name: String,
    pub(crate) organization_slug: String,
    pub(crate) inviter_email: Option<String>,
}

/// An invitation in its recipient's list: with the organization's name (as 1.7 answers it).
#[derive(Debug, Object, Serialize)]
#[oai(rename = "UserInvitation", rename_all = "camelCase")]
#[serde(rename_all = "camelCase")]
pub(crate) struct UserInvitation {
    #[oai(flatten)]
    #[serde(flatten)]
    pub(crate) invitation: InvitationDto,
    pub(crate) organization_name: String,
}

/// A role as a string (`"admin"` or `"admin,member"`) or a list of roles. Parsed by hand:
/// poem-openapi's `Union` documents a string-or-array as an object.
#[derive(Debug)]
pub(crate) enum RoleInput {
    One(String),
    Many(Vec<String>),
}

impl poem_openapi::types::Type for RoleInput {
    const IS_REQUIRED: bool = true;
    type RawValueType = Self;
    type RawElementValueType = Self;

    fn name() -> std::borrow::Cow<'static, str> {
        "RoleInput".into()
    }
    fn schema_ref() -> poem_openapi::registry::MetaSchemaRef {
        use poem_openapi::registry::{MetaSchema, MetaSchemaRef};
        MetaSchemaRef::Inline(Box::new(MetaSchema {
            description: Some(
                "A role (`\"admin\"`, or several: `\"admin,member\"`) or a list of roles.",
            ),
            any_of: vec![
                <String as poem_openapi::types::Type>::schema_ref(),
                <Vec<String> as poem_openapi::types::Type>::schema_ref(),
            ],
            ..MetaSchema::ANY
        }))
    }
    fn as_raw_value(&self) -> Option<&Self> {
        Some(self)
    }
    fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a Self> + 'a> {
        Box::new(std::iter::once(self))
    }
}

impl poem_openapi::types::ParseFromJSON for RoleInput {
    fn parse_from_json(value: Option<serde_json::Value>) -> poem_openapi::types::ParseResult<Self> {
        use serde_json::Value;
        match value {
            Some(Value::String(s)) => Ok(RoleInput::One(s)),
            Some(Value::Array(items)) => items
                .into_iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s),
                    _ => Err(poem_openapi::types::ParseError::custom(
                        "role: expected a string or a list of strings",
                    )),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(RoleInput::Many),
            _ => Err(poem_openapi::types::ParseError::custom(
                "role: expected a string or a list of strings",
            )),
        }
    }
}

impl poem_openapi::types::ToJSON for RoleInput {
    fn to_json(&self) -> Option<serde_json::Value> {
        Some(match self {
            RoleInput::One(s) => serde_json::Value::String(s.clone()),
            RoleInput::Many(v) => serde_json::json!(v),
        })
    }
}

impl RoleInput {
    pub(crate) fn joined(&self) -> String {
        match self {
            RoleInput::One(s) => s.clone(),
            RoleInput::Many(v) => v.join(","),
        }
    }
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub(crate) struct OrgIdBody {
    pub(crate) organization_id: Text,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dto::{JsonBytes, Nullable, SessionDto, SessionWithUser, UserDto};
    use poem::IntoResponse;
    use poem_openapi::types::ToJSON;

    /// What `JsonBytes` writes: the bytes serde makes, as JSON, equal to poem-openapi's `Json`.
    fn same<T: Serialize + ToJSON + Send + Clone>(v: &T) {
        let serde = serde_json::to_value(v).unwrap();
        assert_eq!(Some(serde.clone()), v.to_json());
        let r = JsonBytes::new(v).into_response();
        let p = poem_openapi::payload::Json(v.clone()).into_response();
        assert_eq!(r.status(), p.status());
        assert_eq!(r.content_type(), p.content_type());
        let body = body_of(r);
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&body).unwrap(),
            serde
        );
    }

    fn body_of(r: poem::Response) -> Vec<u8> {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(r.into_body().into_vec())
            .unwrap()
    }

    fn user(full: bool) -> UserDto {
        UserDto {
            id: "u1".into(),
            email: "a@example.com".into(),
            name: "Ada \"Quote\" \u{e9}".into(),
            image: full.then(|| "https://img.example/a.png".into()),
            email_verified: full,
            created_at: "2026-11-24T10:00:00.000Z".into(),
            updated_at: "2026-11-24T10:00:01.000Z".into(),
            role: "user".into(),
            banned: full,
            ban_reason: full.then(|| "spam".into()),
            ban_expires: full.then(|| "2026-12-24T10:00:00.000Z".into()),
            two_factor_enabled: full,
        }
    }

    fn session(full: bool) -> SessionDto {
        SessionDto {
            id: "s1".into(),
            token: "t".into(),
            user_id: "u1".into(),
            expires_at: "2026-12-01T10:00:00.000Z".into(),
            ip_address: full.then(|| "127.0.0.1".into()),
            user_agent: full.then(|| "curl/8".into()),
            created_at: "2026-11-24T10:00:00.000Z".into(),
            updated_at: "2026-11-24T10:00:00.000Z".into(),
            active_organization_id: full.then(|| "o1".into()),
            active_team_id: full.then(|| "t1".into()),
            impersonated_by: full.then(|| "admin".into()),
        }
    }

    fn full_org(full: bool) -> FullOrganization {
        FullOrganization {
            organization: OrganizationDto {
                id: "o1".into(),
                name: "Org".into(),
                slug: "org".into(),
                logo: full.then(|| "logo.png".into()),
                metadata: full.then(|| serde_json::json!({"plan": "pro", "seats": [1, 2]})),
                created_at: "2026-11-24T10:00:00.000Z".into(),
            },
            members: vec![MemberDto {
                id: "m1".into(),
                organization_id: "o1".into(),
                user_id: "u1".into(),
                role: "owner,admin".into(),
                team_id: full.then(|| "t1".into()),
                created_at: "2026-11-24T10:00:00.000Z".into(),
                user: full.then(|| MemberUserDto {
                    id: "u1".into(),
                    name: "Ada".into(),
                    email: "a@example.com".into(),
                    image: None,
                }),
            }],
            invitations: vec![InvitationDto {
                id: "i1".into(),
                organization_id: "o1".into(),
                email: "b@example.com".into(),
                role: "member".into(),
                status: "pending".into(),
                team_id: full.then(|| "t1".into()),
                inviter_id: "u1".into(),
                expires_at: "2026-11-26T10:00:00.000Z".into(),
                created_at: "2026-11-24T10:00:00.000Z".into(),
            }],
            teams: vec![TeamWithCount {
                team: crate::plugins::TeamDto::sample(full),
                member_count: 3,
            }],
        }
    }

    #[test]
    fn direct_json_answers_equal_poem_openapi_json() {
        for full in [true, false] {
            same(&Nullable(Some(SessionWithUser {
                session: session(full),
                user: user(full),
            })));
            same(&full_org(full));
            same(&Nullable(Some(full_org(full))));
        }
        same(&Nullable::<SessionWithUser>(None));
    }
}
