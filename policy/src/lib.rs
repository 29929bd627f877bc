//! Gatehouse authorization: which organization role may do what.
//!
//! Policy is data: the built-in matrix of spec §6 is `builtin.csv`, evaluated by casbin with the
//! RBAC-with-domains model in `model.conf` (domain = organization). Roles from configuration hold
//! in every organization; an organization's custom roles (stored in storage) are rows of its own
//! domain, loaded into that organization's [`Policy`].
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

use casbin::{CoreApi, DefaultModel, Enforcer, MemoryAdapter, MgmtApi};

mod admin;
pub use admin::{
    validate_admin_permissions, AdminPolicy, AdminRoles, ADMIN_MODEL, ADMIN_POLICY,
    ADMIN_RESOURCES, DEFAULT_ROLE,
};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

pub const MODEL: &str = include_str!("../model.conf");
pub const BUILTIN_POLICY: &str = include_str!("../builtin.csv");

/// The built-in roles, strongest first.
pub const BUILTIN_ROLES: [&str; 3] = ["owner", "admin", "member"];

/// Resources and the actions each knows (what custom roles may be granted).
pub const RESOURCES: &[(&str, &[&str])] = &[
    ("organization", &["update", "delete"]),
    ("member", &["create", "update", "delete"]),
    ("invitation", &["create", "cancel"]),
    ("team", &["create", "update", "delete"]),
    ("ac", &["create", "read", "update", "delete"]),
    ("apiKey", &["create", "read", "update", "delete"]),
    ("webhook", &["create", "read", "update", "delete"]),
];

/// `{resource: [action, …]}`, as better-auth writes permissions.
pub type Permissions = BTreeMap<String, BTreeSet<String>>;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PolicyError {
    #[error("unknown role {0:?}")]
    UnknownRole(String),
    #[error("unknown resource {0:?}")]
    UnknownResource(String),
    #[error("unknown action {1:?} on {0:?}")]
    UnknownAction(String, String),
    #[error("invalid role name {0:?}")]
    InvalidRoleName(String),
    #[error("policy engine: {0}")]
    Engine(String),
}

/// Checks that every resource and action of `perms` exists.
pub fn validate_permissions(perms: &Permissions) -> Result<(), PolicyError> {
    validate_in(RESOURCES, perms)
}

/// Checks every resource and action of `perms` against a catalog of `(resource, actions)`.
fn validate_in(catalog: &[(&str, &[&str])], perms: &Permissions) -> Result<(), PolicyError> {
    for (res, actions) in perms {
        let Some((_, known)) = catalog.iter().find(|(r, _)| r == res) else {
            return Err(PolicyError::UnknownResource(res.clone()));
        };
        if let Some(a) = actions.iter().find(|a| !known.contains(&a.as_str())) {
            return Err(PolicyError::UnknownAction(res.clone(), a.clone()));
        }
    }
    Ok(())
}

/// A role name: 1–64 characters of `[A-Za-z0-9_-]`, not a list.
pub fn validate_role_name(name: &str) -> Result<(), PolicyError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(PolicyError::InvalidRoleName(name.to_owned()))
    }
}

/// Parses a role list as a client sends it (`"admin"`, `"admin, member"`) into its stored form:
/// entries trimmed, duplicates dropped (first one kept), joined with `,`. An empty entry
/// (`""`, `"member,"`, `"a,,b"`) or an invalid name is refused; whether each role exists is the
/// organization's policy's question ([`Policy::is_role`]).
pub fn normalize_roles(input: &str) -> Result<String, PolicyError> {
    let mut seen: Vec<&str> = Vec::new();
    for entry in input.split(',') {
        let name = entry.trim();
        if name.is_empty() {
            return Err(PolicyError::InvalidRoleName(input.to_owned()));
        }
        validate_role_name(name)?;
        if !seen.contains(&name) {
            seen.push(name);
        }
    }
    Ok(seen.join(","))
}

/// Whether every permission of `a` is also in `b`.
pub fn is_subset(a: &Permissions, b: &Permissions) -> bool {
    within(a, &[b])
}

/// Whether every permission of `a` is in one of `held` (their union, without building it).
pub fn within(a: &Permissions, held: &[&Permissions]) -> bool {
    a.iter().all(|(res, acts)| {
        acts.iter().all(|act| {
            held.iter()
                .any(|h| h.get(res).is_some_and(|have| have.contains(act)))
        })
    })
}

/// Whether `a` and `b` share any permission.
pub fn overlaps(a: &Permissions, b: &Permissions) -> bool {
    a.iter()
        .any(|(res, acts)| b.get(res).is_some_and(|have| !have.is_disjoint(acts)))
}

/// The permissions of `a` that are also in `b`.
pub fn intersection(a: &Permissions, b: &Permissions) -> Permissions {
    a.iter()
        .filter_map(|(res, acts)| {
            let both: BTreeSet<String> = b.get(res)?.intersection(acts).cloned().collect();
            (!both.is_empty()).then(|| (res.clone(), both))
        })
        .collect()
}

/// Splits `"admin, member"` into role names (lenient: for reading stored values).
pub fn parse_roles(roles: &str) -> Vec<&str> {
    roles
        .split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .collect()
}

/// The policy of one organization: built-in roles, configured roles and its custom roles.
///
/// Casbin decides every (role, resource, action) of [`RESOURCES`] once, when the policy is
/// built, into `matrix`; requests then read the matrix (a few map lookups) instead of running
/// the enforcer's expression engine for each check — an escalation check asks for every
/// permission of two roles. Anything outside [`RESOURCES`] still goes to the enforcer.
pub struct Policy {
    org: String,
    enforcer: Enforcer,
    roles: BTreeSet<String>,
    matrix: std::collections::HashMap<String, Permissions>,
    /// [`Policy::owner_only`], worked out once with the matrix (every grant checks it).
    owner_only: Permissions,
}

fn engine(e: impl std::fmt::Display) -> PolicyError {
    PolicyError::Engine(e.to_string())
}

fn rows(sub: &str, dom: &str, perms: &Permissions) -> Vec<Vec<String>> {
    perms
        .iter()
        .flat_map(|(res, acts)| {
            acts.iter()
                .map(move |a| vec![sub.to_owned(), dom.to_owned(), res.clone(), a.clone()])
        })
        .collect()
}

impl Policy {
    /// Builds the policy of organization `org` from the built-in rows, `global` roles (from
    /// configuration, valid everywhere) and the organization's `custom` roles.
    pub async fn new(
        org: &str,
        global: &[(String, Permissions)],
        custom: &[(String, Permissions)],
    ) -> Result<Self, PolicyError> {
        let model = DefaultModel::from_str(MODEL).await.map_err(engine)?;
        let mut enforcer = Enforcer::new(model, MemoryAdapter::default())
            .await
            .map_err(engine)?;
        let mut all: Vec<Vec<String>> = BUILTIN_POLICY
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("p,"))
            .map(|l| l.split(',').skip(1).map(|f| f.trim().to_owned()).collect())
            .collect();
        let mut roles: BTreeSet<String> = BUILTIN_ROLES.iter().map(|r| r.to_string()).collect();
        for (name, perms) in global {
            validate_role_name(name)?;
            validate_permissions(perms)?;
            all.extend(rows(name, "*", perms));
            roles.insert(name.clone());
        }
        for (name, perms) in custom {
            validate_role_name(name)?;
            validate_permissions(perms)?;
            all.extend(rows(name, org, perms));
            roles.insert(name.clone());
        }
        if !all.is_empty() {
            enforcer.add_policies(all).await.map_err(engine)?;
        }
        let mut policy = Self {
            org: org.to_owned(),
            enforcer,
            roles,
            matrix: Default::default(),
            owner_only: Permissions::new(),
        };
        let mut matrix = std::collections::HashMap::new();
        for role in &policy.roles {
            let mut perms = Permissions::new();
            for (res, actions) in RESOURCES {
                for act in *actions {
                    if policy.enforce(role, res, act)? {
                        perms
                            .entry(res.to_string())
                            .or_default()
                            .insert(act.to_string());
                    }
                }
            }
            matrix.insert(role.clone(), perms);
        }
        policy.matrix = matrix;
        policy.owner_only = policy.owners_part()?;
        Ok(policy)
    }

    fn enforce(&self, role: &str, resource: &str, action: &str) -> Result<bool, PolicyError> {
        self.enforcer
            .enforce((role, self.org.as_str(), resource, action))
            .map_err(engine)
    }

    fn known(resource: &str, action: &str) -> bool {
        RESOURCES
            .iter()
            .any(|(r, acts)| *r == resource && acts.contains(&action))
    }

    pub fn is_role(&self, role: &str) -> bool {
        self.roles.contains(role)
    }

    /// Every role name this organization knows.
    pub fn roles(&self) -> impl Iterator<Item = &str> {
        self.roles.iter().map(String::as_str)
    }

    /// Whether any of the comma-separated `roles` may do `action` on `resource`. A role that
    /// does not exist is an error, never a silent "no".
    pub fn allows(&self, roles: &str, resource: &str, action: &str) -> Result<bool, PolicyError> {
        let mut any = false;
        for role in parse_roles(roles) {
            if !self.is_role(role) {
                return Err(PolicyError::UnknownRole(role.to_owned()));
            }
            let granted = match self.matrix.get(role) {
                Some(perms) if Self::known(resource, action) => perms
                    .get(resource)
                    .is_some_and(|acts| acts.contains(action)),
                _ => self.enforce(role, resource, action)?,
            };
            if granted {
                any = true;
            }
        }
        Ok(any)
    }

    /// Every permission the comma-separated `roles` grant together (unknown role: an error).
    /// One role's are borrowed from the matrix; several roles' are their union.
    pub fn permissions_of(&self, roles: &str) -> Result<Cow<'_, Permissions>, PolicyError> {
        let mut out: Option<Cow<'_, Permissions>> = None;
        for role in parse_roles(roles) {
            let perms = self
                .matrix
                .get(role)
                .ok_or_else(|| PolicyError::UnknownRole(role.to_owned()))?;
            match &mut out {
                None => out = Some(Cow::Borrowed(perms)),
                Some(so_far) => {
                    let union = so_far.to_mut();
                    for (res, acts) in perms {
                        union
                            .entry(res.clone())
                            .or_default()
                            .extend(acts.iter().cloned());
                    }
                }
            }
        }
        Ok(out.unwrap_or_default())
    }

    /// What only owners hold: the built-in `owner` role's permissions that `admin` lacks
    /// (deleting the organization). Only an owner may grant these, whatever other roles say.
    pub fn owner_only(&self) -> &Permissions {
        &self.owner_only
    }

    fn owners_part(&self) -> Result<Permissions, PolicyError> {
        let owner = self.permissions_of("owner")?;
        let admin = self.permissions_of("admin")?;
        Ok(owner
            .iter()
            .filter_map(|(res, acts)| {
                let only: BTreeSet<String> = match admin.get(res) {
                    Some(a) => acts.difference(a).cloned().collect(),
                    None => acts.clone(),
                };
                (!only.is_empty()).then(|| (res.clone(), only))
            })
            .collect())
    }

    /// Whether the roles grant every permission asked for.
    pub fn allows_all(&self, roles: &str, perms: &Permissions) -> Result<bool, PolicyError> {
        for (res, acts) in perms {
            for act in acts {
                if !self.allows(roles, res, act)? {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn perms(pairs: &[(&str, &[&str])]) -> Permissions {
        pairs
            .iter()
            .map(|(r, a)| (r.to_string(), a.iter().map(|x| x.to_string()).collect()))
            .collect()
    }

    /// Every built-in role × resource × action, against spec §6.
    #[tokio::test]
    async fn builtin_matrix() {
        let p = Policy::new("org1", &[], &[]).await.unwrap();
        for (res, actions) in RESOURCES {
            for act in *actions {
                let owner = true;
                let admin = !(*res == "organization" && *act == "delete");
                let member = *res == "ac" && *act == "read";
                assert_eq!(
                    p.allows("owner", res, act).unwrap(),
                    owner,
                    "owner {res}:{act}"
                );
                assert_eq!(
                    p.allows("admin", res, act).unwrap(),
                    admin,
                    "admin {res}:{act}"
                );
                assert_eq!(
                    p.allows("member", res, act).unwrap(),
                    member,
                    "member {res}:{act}"
                );
                // Several roles: any grants.
                assert_eq!(p.allows("member, admin", res, act).unwrap(), admin);
            }
        }
        assert_eq!(
            p.allows("ghost", "member", "create"),
            Err(PolicyError::UnknownRole("ghost".into()))
        );
        assert_eq!(
            p.allows("admin,ghost", "member", "create"),
            Err(PolicyError::UnknownRole("ghost".into()))
        );
    }

    #[tokio::test]
    async fn custom_roles_are_scoped_to_their_organization() {
        let custom = vec![(
            "recruiter".to_string(),
            perms(&[("member", &["create"]), ("invitation", &["create"])]),
        )];
        let global = vec![("auditor".to_string(), perms(&[("ac", &["read"])]))];
        let org1 = Policy::new("org1", &global, &custom).await.unwrap();
        let org2 = Policy::new("org2", &global, &[]).await.unwrap();
        assert!(org1.allows("recruiter", "member", "create").unwrap());
        assert!(org1.allows("recruiter", "invitation", "create").unwrap());
        assert!(!org1.allows("recruiter", "organization", "delete").unwrap());
        assert!(!org1.allows("recruiter", "member", "delete").unwrap());
        assert!(org2.allows("recruiter", "member", "create").is_err());
        assert!(org1.allows("auditor", "ac", "read").unwrap());
        assert!(org2.allows("auditor", "ac", "read").unwrap());
        assert!(org1
            .allows_all(
                "recruiter",
                &perms(&[("member", &["create"]), ("invitation", &["create"])])
            )
            .unwrap());
        assert!(!org1
            .allows_all("recruiter", &perms(&[("member", &["create", "delete"])]))
            .unwrap());
    }

    #[tokio::test]
    async fn bad_roles_and_permissions_are_refused() {
        let bad = vec![("x".to_string(), perms(&[("spaceship", &["fly"])]))];
        assert!(matches!(
            Policy::new("o", &[], &bad).await,
            Err(PolicyError::UnknownResource(_))
        ));
        let bad = vec![("x".to_string(), perms(&[("member", &["fly"])]))];
        assert!(matches!(
            Policy::new("o", &[], &bad).await,
            Err(PolicyError::UnknownAction(..))
        ));
        assert!(validate_role_name("a,b").is_err());
        assert!(validate_role_name("").is_err());
        assert!(validate_role_name("team-lead_2").is_ok());
        assert_eq!(parse_roles(" admin , member,,"), vec!["admin", "member"]);
    }

    #[test]
    fn role_lists_are_normalized_or_refused() {
        assert_eq!(normalize_roles("owner ").unwrap(), "owner");
        assert_eq!(
            normalize_roles(" admin , member,admin").unwrap(),
            "admin,member"
        );
        for bad in ["", " ", "member,", ",member", "a,,b", "ad min", "a;b"] {
            assert!(normalize_roles(bad).is_err(), "{bad:?}");
        }
    }

    #[tokio::test]
    async fn permission_sets() {
        let custom = vec![(
            "deleter".to_string(),
            perms(&[("organization", &["delete"]), ("member", &["update"])]),
        )];
        let p = Policy::new("o", &[], &custom).await.unwrap();
        let admin = p.permissions_of("admin").unwrap();
        let owner = p.permissions_of("owner").unwrap();
        assert!(is_subset(&admin, &owner));
        assert!(!is_subset(&owner, &admin));
        assert_eq!(p.owner_only(), &perms(&[("organization", &["delete"])]));
        let deleter = p.permissions_of("deleter").unwrap();
        assert!(!is_subset(&deleter, &admin));
        assert_eq!(
            p.permissions_of("member,deleter").unwrap().into_owned(),
            perms(&[
                ("organization", &["delete"]),
                ("member", &["update"]),
                ("ac", &["read"])
            ])
        );
        assert_eq!(
            intersection(&deleter, p.owner_only()),
            perms(&[("organization", &["delete"])])
        );
        assert!(is_subset(&Permissions::new(), &admin));
        assert!(p.permissions_of("ghost").is_err());
    }

    /// The matrix read at request time is what the enforcer itself decides, for every role
    /// (built-in, configured, custom) and every resource and action.
    #[tokio::test]
    async fn the_matrix_is_the_enforcers_decision() {
        let global = vec![(
            "auditor".to_string(),
            perms(&[("organization", &["update"])]),
        )];
        let custom = vec![(
            "recruiter".to_string(),
            perms(&[
                ("member", &["create"]),
                ("invitation", &["create", "cancel"]),
            ]),
        )];
        let p = Policy::new("org-1", &global, &custom).await.unwrap();
        let roles: Vec<String> = p.roles().map(str::to_owned).collect();
        assert!(roles.len() >= 5, "{roles:?}");
        for role in &roles {
            for (res, acts) in RESOURCES {
                for act in *acts {
                    assert_eq!(
                        p.allows(role, res, act).unwrap(),
                        p.enforce(role, res, act).unwrap(),
                        "{role} {res} {act}"
                    );
                }
            }
        }
        assert!(p.allows("recruiter", "invitation", "cancel").unwrap());
        assert!(!p.allows("recruiter", "member", "delete").unwrap());
        assert!(p
            .allows("member,auditor", "organization", "update")
            .unwrap());
        assert!(p.allows("nobody", "member", "create").is_err());
        assert!(p.permissions_of("member, nobody").is_err());
    }
}
