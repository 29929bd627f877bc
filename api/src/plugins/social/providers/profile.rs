//! What each provider's profile says about the user (PROVIDERS.md §3.3): the account id, name,
//! email, whether the provider verified that email, and the picture.
use serde_json::Value;

/// The user as a provider describes them.
#[derive(Debug, Clone, PartialEq)]
pub struct UserInfo {
    /// The provider's id of the account: never empty, `"undefined"` or `"null"`.
    pub id: String,
    pub name: String,
    /// Lower-cased; a placeholder (`{id}@{provider}.placeholder.invalid`, never verified) for
    /// providers that have none.
    pub email: Option<String>,
    pub email_verified: bool,
    pub image: Option<String>,
}

/// A string at `path` (numbers are written out, as JavaScript's `String()` would).
pub(crate) fn s(v: &Value, path: &[&str]) -> Option<String> {
    let mut cur = v;
    for p in path {
        cur = match p.parse::<usize>() {
            Ok(i) if cur.is_array() => cur.get(i)?,
            _ => cur.get(*p)?,
        };
    }
    match cur {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `true`, or the string `"true"` (better-auth's `parseStringBoolean`); anything else false.
pub(crate) fn truthy(v: &Value, path: &[&str]) -> bool {
    let mut cur = v;
    for p in path {
        match cur.get(*p) {
            Some(next) => cur = next,
            None => return false,
        }
    }
    matches!(cur, Value::Bool(true)) || cur.as_str() == Some("true")
}

fn placeholder(id: &str, provider: &str) -> String {
    format!("{id}@{provider}.placeholder.invalid")
}

/// Maps a provider's profile (for id-token providers, the token's claims) to [`UserInfo`];
/// `extra` is what the provider's second call answered (GitHub's e-mail list, Twitter's
/// confirmed email), `Value::Null` otherwise. `None`: the profile does not identify a user
/// the provider allows to sign in (`unable_to_get_user_info`).
pub fn map(provider: &str, p: &Value, extra: &Value) -> Option<UserInfo> {
    let (id, name, email, verified, image) = match provider {
        "apple" => {
            let first = s(p, &["user", "name", "firstName"]).unwrap_or_default();
            let last = s(p, &["user", "name", "lastName"]).unwrap_or_default();
            let joined = format!("{first} {last}").trim().to_owned();
            let name = if joined.is_empty() {
                s(p, &["name"]).unwrap_or_default()
            } else {
                joined
            };
            (
                s(p, &["sub"]),
                name,
                s(p, &["email"]),
                truthy(p, &["email_verified"]),
                None,
            )
        }
        "discord" => {
            let id = s(p, &["id"]);
            let image = match (s(p, &["avatar"]), id.as_deref()) {
                (Some(avatar), Some(id)) => {
                    let ext = if avatar.starts_with("a_") {
                        "gif"
                    } else {
                        "png"
                    };
                    Some(format!(
                        "https://cdn.discordapp.com/avatars/{id}/{avatar}.{ext}"
                    ))
                }
                (None, Some(id)) => {
                    let disc = s(p, &["discriminator"]).unwrap_or_else(|| "0".into());
                    let n = if disc == "0" {
                        id.parse::<u64>().map(|v| (v >> 22) % 6).unwrap_or(0)
                    } else {
                        disc.parse::<u64>().map(|v| v % 5).unwrap_or(0)
                    };
                    Some(format!("https://cdn.discordapp.com/embed/avatars/{n}.png"))
                }
                _ => None,
            };
            (
                id,
                s(p, &["global_name"])
                    .or_else(|| s(p, &["username"]))
                    .unwrap_or_default(),
                s(p, &["email"]),
                truthy(p, &["verified"]),
                image,
            )
        }
        "facebook" => (
            s(p, &["id"]),
            s(p, &["name"]).unwrap_or_default(),
            s(p, &["email"]),
            truthy(p, &["email_verified"]),
            s(p, &["picture", "data", "url"]),
        ),
        "github" => {
            let emails = extra.as_array().cloned().unwrap_or_default();
            let email = s(p, &["email"]).or_else(|| {
                emails
                    .iter()
                    .find(|e| truthy(e, &["primary"]))
                    .or(emails.first())
                    .and_then(|e| s(e, &["email"]))
            });
            let verified = email.as_deref().is_some_and(|want| {
                emails.iter().any(|e| {
                    s(e, &["email"]).is_some_and(|x| x.eq_ignore_ascii_case(want))
                        && truthy(e, &["verified"])
                })
            });
            (
                s(p, &["id"]),
                s(p, &["name"])
                    .or_else(|| s(p, &["login"]))
                    .unwrap_or_default(),
                email,
                verified,
                s(p, &["avatar_url"]),
            )
        }
        "microsoft" => {
            let email = s(p, &["email"]);
            let verified = if p.get("email_verified").is_some() {
                truthy(p, &["email_verified"])
            } else {
                let listed = |claim: &str| match (p.get(claim), email.as_deref()) {
                    (Some(Value::Array(a)), Some(e)) => a
                        .iter()
                        .any(|x| x.as_str().is_some_and(|x| x.eq_ignore_ascii_case(e))),
                    (Some(Value::String(x)), Some(e)) => x.eq_ignore_ascii_case(e),
                    _ => false,
                };
                listed("verified_primary_email") || listed("verified_secondary_email")
            };
            (
                s(p, &["oid"]),
                s(p, &["name"]).unwrap_or_default(),
                email,
                verified,
                s(extra, &["photo"]),
            )
        }
        "google" => (
            s(p, &["sub"]),
            s(p, &["name"]).unwrap_or_default(),
            s(p, &["email"]),
            truthy(p, &["email_verified"]),
            s(p, &["picture"]),
        ),
        "spotify" => (
            s(p, &["id"]),
            s(p, &["display_name"]).unwrap_or_default(),
            s(p, &["email"]),
            false,
            s(p, &["images", "0", "url"]),
        ),
        "twitch" => (
            s(p, &["sub"]),
            s(p, &["preferred_username"]).unwrap_or_default(),
            s(p, &["email"]),
            truthy(p, &["email_verified"]),
            s(p, &["picture"]),
        ),
        "twitter" => {
            let id = s(p, &["data", "id"]);
            let confirmed = s(extra, &["data", "confirmed_email"]);
            let verified = confirmed.is_some();
            let email = confirmed.or_else(|| id.as_deref().map(|i| placeholder(i, "twitter")));
            (
                id,
                s(p, &["data", "name"]).unwrap_or_default(),
                email,
                verified,
                s(p, &["data", "profile_image_url"]),
            )
        }
        "dropbox" => (
            s(p, &["account_id"]),
            s(p, &["name", "display_name"]).unwrap_or_default(),
            s(p, &["email"]),
            truthy(p, &["email_verified"]),
            s(p, &["profile_photo_url"]),
        ),
        "kick" => {
            let u = p.get("data").and_then(|d| d.get(0)).unwrap_or(&Value::Null);
            (
                s(u, &["user_id"]),
                s(u, &["name"]).unwrap_or_default(),
                s(u, &["email"]),
                false,
                s(u, &["profile_picture"]),
            )
        }
        "linkedin" => (
            s(p, &["sub"]),
            s(p, &["name"]).unwrap_or_default(),
            s(p, &["email"]),
            truthy(p, &["email_verified"]),
            s(p, &["picture"]),
        ),
        "gitlab" => {
            if s(p, &["state"]).as_deref() != Some("active") || truthy(p, &["locked"]) {
                return None;
            }
            (
                s(p, &["id"]),
                s(p, &["name"])
                    .or_else(|| s(p, &["username"]))
                    .unwrap_or_default(),
                s(p, &["email"]),
                truthy(p, &["email_verified"]),
                s(p, &["avatar_url"]),
            )
        }
        "tiktok" => {
            let u = p
                .get("data")
                .and_then(|d| d.get("user"))
                .unwrap_or(&Value::Null);
            let id = s(u, &["open_id"]);
            (
                id.clone(),
                s(u, &["display_name"])
                    .or_else(|| s(u, &["username"]))
                    .unwrap_or_default(),
                s(u, &["email"]).or_else(|| id.as_deref().map(|i| placeholder(i, "tiktok"))),
                false,
                s(u, &["avatar_large_url"]),
            )
        }
        "reddit" => {
            let id = s(p, &["id"]);
            (
                id.clone(),
                s(p, &["name"]).unwrap_or_default(),
                id.as_deref().map(|i| placeholder(i, "reddit")),
                false,
                s(p, &["icon_img"]).map(|u| u.split('?').next().unwrap_or_default().to_owned()),
            )
        }
        "roblox" => {
            let id = s(p, &["sub"]);
            (
                id.clone(),
                s(p, &["nickname"])
                    .or_else(|| s(p, &["preferred_username"]))
                    .unwrap_or_default(),
                id.as_deref().map(|i| placeholder(i, "roblox")),
                false,
                s(p, &["picture"]),
            )
        }
        "vk" => {
            let u = p.get("user").unwrap_or(&Value::Null);
            let email = s(u, &["email"]);
            email.as_ref()?;
            let name = format!(
                "{} {}",
                s(u, &["first_name"]).unwrap_or_default(),
                s(u, &["last_name"]).unwrap_or_default()
            );
            (
                s(u, &["user_id"]),
                name.trim().to_owned(),
                email,
                false,
                s(u, &["avatar"]),
            )
        }
        "zoom" => (
            s(p, &["id"]),
            s(p, &["display_name"]).unwrap_or_default(),
            s(p, &["email"]),
            truthy(p, &["verified"]) || p.get("verified").and_then(Value::as_i64) == Some(1),
            s(p, &["pic_url"]),
        ),
        _ => return None,
    };
    let id = id.filter(|i| !i.is_empty() && i != "undefined" && i != "null")?;
    Some(UserInfo {
        id,
        name,
        email: email.map(|e| e.trim().to_lowercase()),
        email_verified: verified,
        image,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn github_takes_the_primary_listed_email_and_its_verification() {
        let u = map(
            "github",
            &json!({"id": 503, "login": "octo", "name": null, "email": null, "avatar_url": "a"}),
            &json!([{"email": "x@e.com", "primary": false, "verified": true},
                    {"email": "Octo@E.com", "primary": true, "verified": true}]),
        )
        .unwrap();
        assert_eq!(u.id, "503");
        assert_eq!(u.name, "octo");
        assert_eq!(u.email.as_deref(), Some("octo@e.com"));
        assert!(u.email_verified);
    }

    #[test]
    fn providers_without_email_get_a_placeholder_never_verified() {
        let u = map(
            "reddit",
            &json!({"id": "t2", "name": "r", "icon_img": "https://i/x.png?a=1"}),
            &Value::Null,
        )
        .unwrap();
        assert_eq!(u.email.as_deref(), Some("t2@reddit.placeholder.invalid"));
        assert!(!u.email_verified);
        assert_eq!(u.image.as_deref(), Some("https://i/x.png"));
    }

    #[test]
    fn unusable_profiles_are_refused() {
        assert!(map("github", &json!({"login": "x"}), &Value::Null).is_none());
        assert!(map(
            "gitlab",
            &json!({"id": 1, "state": "blocked"}),
            &Value::Null
        )
        .is_none());
        assert!(map("vk", &json!({"user": {"user_id": "1"}}), &Value::Null).is_none());
        assert!(map("microsoft", &json!({"sub": "s"}), &Value::Null).is_none());
        assert!(map("google", &json!({"sub": "null"}), &Value::Null).is_none());
    }

    #[test]
    fn string_booleans_count() {
        let u = map(
            "google",
            &json!({"sub": "1", "email": "a@b.co", "email_verified": "true"}),
            &Value::Null,
        )
        .unwrap();
        assert!(u.email_verified);
        let u = map(
            "google",
            &json!({"sub": "1", "email": "a@b.co", "email_verified": "yes"}),
            &Value::Null,
        )
        .unwrap();
        assert!(!u.email_verified);
    }
}
