//! Who may administer users and sessions (the admin plugin's global roles).
//!
//! The same engine and file style as the organization matrix: the built-in `admin` role is
//! `admin_builtin.csv`, evaluated by casbin with the plain RBAC model in `admin_model.conf`.
//! Roles from configuration add their own rows (a configured `admin` or `user` replaces the
//! built-in one). A user's role list is comma-separated; any role that grants, grants. Users
//! listed in `admin_user_ids` hold every permission.
use crate::{engine, validate_role_name, Permissions, PolicyError};
use casbin::{CoreApi, DefaultModel, Enforcer, MemoryAdapter, MgmtApi};
use std::collections::BTreeSet;

pub const ADMIN_MODEL: &str = include_str!("../admin_model.conf");
pub const ADMIN_POLICY: &str = include_str!("../admin_builtin.csv");

/// The role every user has unless another is set.
pub const DEFAULT_ROLE: &str = "user";

/// Resources of the admin plugin and the actions each knows.
pub const ADMIN_RESOURCES: &[(&str, &[&str])] = &[
    (
        "user",
        &[
            "create",
            "list",
            "set-role",
            "ban",
            "impersonate",
            "impersonate-admins",
            "delete",
            "set-password",
            "set-email",
            "get",
            "update",
        ],
    ),
    ("session", &["list", "revoke", "delete"]),
    ("audit-log", &["list"]),
    ("webhook", &["manage"]),
];

/// What configuration says about admin roles.
#[derive(Debug, Clone, Default)]
pub struct AdminRoles {
    /// Extra (or replacing) roles: name → permissions on `user` / `session`.
    pub roles: Vec<(String, Permissions)>,
    /// Roles whose holders count as administrators (impersonating them needs
    /// `user:impersonate-admins`). Each must be a known role.
    pub admin_roles: Vec<String>,
    /// Users who hold every permission, whatever their role.
    pub admin_user_ids: Vec<String>,
}

/// Checks that every resource and action of `perms` exists in the admin plugin.
pub fn validate_admin_permissions(perms: &Permissions) -> Result<(), PolicyError> {
    crate::validate_in(ADMIN_RESOURCES, perms)
}

/// The global (admin plugin) policy of one server.
pub struct AdminPolicy {
    enforcer: Enforcer,
    roles: BTreeSet<String>,
    admin_roles: BTreeSet<String>,
    admin_user_ids: BTreeSet<String>,
}

impl AdminPolicy {
    pub async fn new(cfg: &AdminRoles) -> Result<Self, PolicyError> {
        let model = DefaultModel::from_str(ADMIN_MODEL).await.map_err(engine)?;
        let mut enforcer = Enforcer::new(model, MemoryAdapter::default())
            .await
            .map_err(engine)?;
        let configured: BTreeSet<&str> = cfg.roles.iter().map(|(n, _)| n.as_str()).collect();
        let mut rows: Vec<Vec<String>> = ADMIN_POLICY
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("p,"))
            .map(|l| l.split(',').skip(1).map(|f| f.trim().to_owned()).collect())
            .filter(|row: &Vec<String>| !configured.contains(row[0].as_str()))
            .collect();
        let mut roles: BTreeSet<String> = ["admin", DEFAULT_ROLE].map(String::from).into();
        for (name, perms) in &cfg.roles {
            validate_role_name(name)?;
            validate_admin_permissions(perms)?;
            for (res, acts) in perms {
                rows.extend(
                    acts.iter()
                        .map(|a| vec![name.clone(), res.clone(), a.clone()]),
                );
            }
            roles.insert(name.clone());
        }
        if let Some(unknown) = cfg.admin_roles.iter().find(|r| !roles.contains(*r)) {
            return Err(PolicyError::UnknownRole(unknown.clone()));
        }
        if !rows.is_empty() {
            enforcer.add_policies(rows).await.map_err(engine)?;
        }
        Ok(Self {
            enforcer,
            roles,
            admin_roles: cfg.admin_roles.iter().cloned().collect(),
            admin_user_ids: cfg.admin_user_ids.iter().cloned().collect(),
        })
    }

    /// Whether `role` is a role this server knows.
    pub fn is_role(&self, role: &str) -> bool {
        self.roles.contains(role)
    }

    /// Every role this server knows.
    pub fn roles(&self) -> impl Iterator<Item = &str> {
        self.roles.iter().map(String::as_str)
    }

    /// Whether the user (`id`, stored `roles`; `None` is the default role) may do `action` on
    /// `resource`. A stored role this server does not know grants nothing.
    pub fn allows(&self, id: &str, roles: Option<&str>, resource: &str, action: &str) -> bool {
        if self.admin_user_ids.contains(id) {
            return true;
        }
        crate::parse_roles(roles.unwrap_or(DEFAULT_ROLE))
            .into_iter()
            .filter(|r| self.is_role(r))
            .any(|r| {
                self.enforcer
                    .enforce((r, resource, action))
                    .unwrap_or(false)
            })
    }

    /// Whether the user holds every permission of `perms`.
    pub fn allows_all(&self, id: &str, roles: Option<&str>, perms: &Permissions) -> bool {
        perms
            .iter()
            .all(|(res, acts)| acts.iter().all(|a| self.allows(id, roles, res, a)))
    }

    /// Whether the user counts as an administrator (an admin role or a listed id).
    pub fn is_admin(&self, id: &str, roles: Option<&str>) -> bool {
        self.admin_user_ids.contains(id)
            || crate::parse_roles(roles.unwrap_or(DEFAULT_ROLE))
                .iter()
                .any(|r| self.admin_roles.contains(*r))
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

    fn cfg(roles: Vec<(String, Permissions)>) -> AdminRoles {
        AdminRoles {
            roles,
            admin_roles: vec!["admin".into()],
            admin_user_ids: vec!["root".into()],
        }
    }

    #[tokio::test]
    async fn builtin_admin_and_user() {
        let p = AdminPolicy::new(&cfg(vec![])).await.unwrap();
        for (res, actions) in ADMIN_RESOURCES {
            for act in *actions {
                let admin = *act != "impersonate-admins";
                assert_eq!(p.allows("a", Some("admin"), res, act), admin, "{res}:{act}");
                assert!(!p.allows("u", Some("user"), res, act), "{res}:{act}");
                assert!(!p.allows("u", None, res, act), "{res}:{act}");
                assert!(p.allows("root", None, res, act), "{res}:{act}");
                assert_eq!(p.allows("a", Some("user,admin"), res, act), admin);
                assert!(!p.allows("g", Some("ghost"), res, act));
            }
        }
        assert!(p.is_admin("a", Some("user, admin")));
        assert!(p.is_admin("root", None));
        assert!(!p.is_admin("u", None));
    }

    #[tokio::test]
    async fn configured_roles() {
        let support = (
            "support".to_string(),
            perms(&[("user", &["list", "get"]), ("session", &["list"])]),
        );
        let p = AdminPolicy::new(&cfg(vec![support])).await.unwrap();
        assert!(p.allows("s", Some("support"), "user", "list"));
        assert!(p.allows("s", Some("support"), "session", "list"));
        assert!(!p.allows("s", Some("support"), "user", "ban"));
        assert!(p.allows_all("s", Some("support"), &perms(&[("user", &["get", "list"])])));
        assert!(!p.allows_all("s", Some("support"), &perms(&[("user", &["get", "ban"])])));
        assert!(p.is_role("support"));
        // A configured `admin` replaces the built-in one.
        let narrow = ("admin".to_string(), perms(&[("user", &["list"])]));
        let p = AdminPolicy::new(&cfg(vec![narrow])).await.unwrap();
        assert!(p.allows("a", Some("admin"), "user", "list"));
        assert!(!p.allows("a", Some("admin"), "user", "ban"));
    }

    #[tokio::test]
    async fn bad_configuration_is_refused() {
        let bad = ("x".to_string(), perms(&[("user", &["fly"])]));
        assert!(AdminPolicy::new(&cfg(vec![bad])).await.is_err());
        let bad = ("x".to_string(), perms(&[("organization", &["update"])]));
        assert!(AdminPolicy::new(&cfg(vec![bad])).await.is_err());
        let mut c = cfg(vec![]);
        c.admin_roles = vec!["superuser".into()];
        assert!(matches!(
            AdminPolicy::new(&c).await,
            Err(PolicyError::UnknownRole(_))
        ));
    }
}
