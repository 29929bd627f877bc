//! Organizations: one partition each (`org_rows`; see the module documentation of `scylla`),
//! changed only by conditional batches on the organization's version; slugs claimed in
//! `orgs_by_slug`; lookups by user, invitation id, email and team id kept beside it.
use super::*;
use crate::*;

pub(super) const ORG_COLS: &str =
    "kind, key, o_name, o_slug, o_logo, o_metadata, o_created_at, version, \
    member_count, owner_count, roles_version, id, user_id, role, team_id, email, status, \
    inviter_id, permission, name, expires_at, created_at, updated_at";
pub(crate) const STATIC_COLS: &str = "o_name, o_slug, o_logo, o_metadata, o_created_at, version, \
    member_count, owner_count, roles_version";

/// A user's lookup entry whose organization (or membership) is not there is counted as under
/// way for this long.
pub(super) const PENDING_ENTRY_MS: i64 = 60_000;

/// A slug claim older than this whose organization never appeared was left by a crash between
/// the claim and the organization; it may be taken over.
pub(super) const ORPHAN_CLAIM_MS: i64 = 60_000;

/// An organization's partition as read at one moment.
#[derive(Debug, Default, Clone)]
pub(crate) struct Snapshot {
    pub(crate) org: Option<Organization>,
    pub(crate) members: Vec<Member>,
    pub(crate) invitations: Vec<Invitation>,
    pub(crate) teams: Vec<Team>,
    pub(crate) team_members: Vec<TeamMember>,
    pub(crate) roles: Vec<OrganizationRole>,
}

/// The organization from the static columns at `at` (the first of `STATIC_COLS`).
pub(crate) fn org_of(id: &OrgId, c: &Cols<'_>, at: usize) -> StoreResult<Option<Organization>> {
    let Some(name) = c.otext(at) else {
        return Ok(None);
    };
    Ok(Some(Organization {
        id: id.clone(),
        name,
        slug: c.text(at + 1)?,
        logo: c.otext(at + 2),
        metadata: c.otext(at + 3),
        created_at: c.ts(at + 4)?,
        version: c.big(at + 5) as u64,
        member_count: c.big(at + 6) as u32,
        owner_count: c.big(at + 7) as u32,
        roles_version: c.big(at + 8) as u64,
    }))
}

pub(super) fn snapshot_of(id: &OrgId, rows: &[Row]) -> StoreResult<Snapshot> {
    let mut s = Snapshot::default();
    for r in rows {
        let c = Cols(r);
        if s.org.is_none() {
            s.org = org_of(id, &c, 2)?;
        }
        let org = id.clone();
        match c.otext(0).as_deref() {
            Some("member") => s.members.push(Member {
                id: MemberId(c.text(11)?),
                organization_id: org,
                user_id: UserId(c.text(12)?),
                role: c.text(13)?,
                team_id: c.otext(14).map(TeamId),
                created_at: c.ts(21)?,
            }),
            Some("invitation") => s.invitations.push(Invitation {
                id: InvitationId(c.text(11)?),
                organization_id: org,
                email: c.text(15)?,
                role: c.text(13)?,
                status: InvitationStatus::parse(&c.text(16)?)
                    .ok_or_else(|| StoreError::Internal("unknown invitation status".into()))?,
                team_id: c.otext(14).map(TeamId),
                inviter_id: UserId(c.otext(17).unwrap_or_default()),
                expires_at: c.ts(20)?,
                created_at: c.ts(21)?,
            }),
            Some("team") => s.teams.push(Team {
                id: TeamId(c.text(11)?),
                name: c.text(19)?,
                organization_id: org,
                created_at: c.ts(21)?,
                updated_at: c.ots(22),
            }),
            Some("team_member") => s.team_members.push(TeamMember {
                id: TeamMemberId(c.text(11)?),
                team_id: TeamId(c.text(14)?),
                user_id: UserId(c.text(12)?),
                created_at: c.ts(21)?,
            }),
            Some("role") => s.roles.push(OrganizationRole {
                id: RoleId(c.text(11)?),
                organization_id: org,
                role: c.text(19)?,
                permission: c.text(18)?,
                created_at: c.ts(21)?,
                updated_at: c.ots(22),
            }),
            _ => {}
        }
    }
    if s.org.is_none() {
        // Deleted (or never finished): whatever rows remain are not there.
        return Ok(Snapshot::default());
    }
    s.members
        .sort_by(|a, b| (a.created_at, &a.id.0).cmp(&(b.created_at, &b.id.0)));
    s.invitations
        .sort_by(|a, b| (a.created_at, &a.id.0).cmp(&(b.created_at, &b.id.0)));
    s.teams
        .sort_by(|a, b| (a.created_at, &a.id.0).cmp(&(b.created_at, &b.id.0)));
    s.team_members
        .sort_by(|a, b| (a.created_at, &a.id.0).cmp(&(b.created_at, &b.id.0)));
    s.roles
        .sort_by(|a, b| (a.created_at, &a.id.0).cmp(&(b.created_at, &b.id.0)));
    Ok(s)
}

impl Snapshot {
    /// The partition after `change` (checked already); `touched` collects the rows (kind, key)
    /// written or deleted.
    pub(super) fn apply(
        &mut self,
        change: &OrgChange,
        touched: &mut std::collections::BTreeSet<(&'static str, String)>,
    ) {
        match change {
            OrgChange::AddMember(m) => {
                touched.insert(("member", m.user_id.0.clone()));
                self.members.push(m.clone());
            }
            OrgChange::SetMemberRole { member, role } => {
                if let Some(m) = self.members.iter_mut().find(|m| &m.id == member) {
                    m.role = role.clone();
                    touched.insert(("member", m.user_id.0.clone()));
                }
            }
            OrgChange::RemoveMember(member) => {
                if let Some(at) = self.members.iter().position(|m| &m.id == member) {
                    let m = self.members.remove(at);
                    touched.insert(("member", m.user_id.0.clone()));
                    for t in self.team_members.iter().filter(|t| t.user_id == m.user_id) {
                        touched.insert(("team_member", team_member_key(&t.team_id, &t.user_id)));
                    }
                    self.team_members.retain(|t| t.user_id != m.user_id);
                }
            }
            OrgChange::Invite(i) => {
                touched.insert(("invitation", i.id.0.clone()));
                self.invitations.push(i.clone());
            }
            OrgChange::TransitionInvitation { id, to, .. } => {
                if let Some(i) = self.invitations.iter_mut().find(|i| &i.id == id) {
                    i.status = *to;
                    touched.insert(("invitation", id.0.clone()));
                }
            }
            OrgChange::CreateTeam(t) => {
                touched.insert(("team", t.id.0.clone()));
                self.teams.push(t.clone());
            }
            OrgChange::UpdateTeam(t) => {
                if let Some(x) = self.teams.iter_mut().find(|x| x.id == t.id) {
                    x.name = t.name.clone();
                    x.updated_at = t.updated_at;
                    touched.insert(("team", t.id.0.clone()));
                }
            }
            OrgChange::DeleteTeam(team) => {
                self.teams.retain(|t| &t.id != team);
                touched.insert(("team", team.0.clone()));
                for t in self.team_members.iter().filter(|t| &t.team_id == team) {
                    touched.insert(("team_member", team_member_key(&t.team_id, &t.user_id)));
                }
                self.team_members.retain(|t| &t.team_id != team);
                for m in self
                    .members
                    .iter_mut()
                    .filter(|m| m.team_id.as_ref() == Some(team))
                {
                    m.team_id = None;
                    touched.insert(("member", m.user_id.0.clone()));
                }
            }
            OrgChange::AddTeamMember(tm) => {
                touched.insert(("team_member", team_member_key(&tm.team_id, &tm.user_id)));
                self.team_members.push(tm.clone());
            }
            OrgChange::RemoveTeamMember { team, user } => {
                self.team_members
                    .retain(|t| !(&t.team_id == team && &t.user_id == user));
                touched.insert(("team_member", team_member_key(team, user)));
            }
            OrgChange::CreateRole(r) => {
                touched.insert(("role", r.role.clone()));
                self.roles.push(r.clone());
            }
            OrgChange::UpdateRole(r) => {
                if let Some(x) = self.roles.iter_mut().find(|x| x.id == r.id) {
                    // The name is the row's key: a rename deletes the old row.
                    touched.insert(("role", x.role.clone()));
                    touched.insert(("role", r.role.clone()));
                    x.role = r.role.clone();
                    x.permission = r.permission.clone();
                    x.updated_at = r.updated_at;
                }
            }
            OrgChange::DeleteRole(role) => {
                if let Some(at) = self.roles.iter().position(|x| &x.id == role) {
                    touched.insert(("role", self.roles.remove(at).role));
                }
            }
        }
    }
}

pub(super) fn team_member_key(team: &TeamId, user: &UserId) -> String {
    format!("{}/{}", team.0, user.0)
}

/// Statements of a conditional batch, and the lookup writes to make once it applied.
#[derive(Default)]
pub(super) struct Plan {
    pub(super) statements: Vec<(String, Vec<V>)>,
    pub(super) after: Vec<(String, Vec<V>)>,
    /// Users who gain a membership: their lookup entry is written and their version moved
    /// before the batch (a concurrent count of their organizations sees it).
    pub(super) joins: Vec<UserId>,
    /// A team deleted: sessions pointing at it lose it, once the batch applied.
    pub(super) cleared_teams: Vec<TeamId>,
    /// Users removed: their sessions lose the organization, once the batch applied.
    pub(super) left: Vec<UserId>,
}

impl ScyllaStore {
    pub(crate) async fn snapshot(&self, id: &OrgId) -> StoreResult<Snapshot> {
        let rows = super::rows_of(
            self.exec_serial(
                &format!(
                    "SELECT {ORG_COLS} FROM {} WHERE org_id = ?",
                    self.t("org_rows")
                ),
                vec![text(&id.0)],
            )
            .await?,
        )?;
        snapshot_of(id, &rows)
    }

    pub(crate) async fn rows_of_kind(&self, org: &OrgId, kind: &str) -> StoreResult<Snapshot> {
        let rows = self
            .rows(
                &format!(
                    "SELECT {ORG_COLS} FROM {} WHERE org_id = ? AND kind = ?",
                    self.t("org_rows")
                ),
                vec![text(&org.0), text(kind)],
            )
            .await?;
        snapshot_of(org, &rows)
    }

    /// The rows of one kind whose key starts with `prefix` (a clustering range).
    pub(crate) async fn rows_with_prefix(
        &self,
        org: &OrgId,
        kind: &str,
        prefix: &str,
    ) -> StoreResult<Snapshot> {
        // Every key with the prefix sorts at or after it and before the prefix with its last
        // byte raised by one (prefixes here end in '/').
        let mut end = prefix.to_owned();
        let last = end
            .pop()
            .map_or('\u{0}', |c| char::from_u32(c as u32 + 1).unwrap_or(c));
        end.push(last);
        let rows = self
            .rows(
                &format!(
                    "SELECT {ORG_COLS} FROM {} WHERE org_id = ? AND kind = ? AND key >= ? \
                     AND key < ?",
                    self.t("org_rows")
                ),
                vec![text(&org.0), text(kind), text(prefix), text(&end)],
            )
            .await?;
        snapshot_of(org, &rows)
    }

    pub(crate) async fn row_of(&self, org: &OrgId, kind: &str, key: &str) -> StoreResult<Snapshot> {
        let rows = self
            .rows(
                &format!(
                    "SELECT {ORG_COLS} FROM {} WHERE org_id = ? AND kind = ? AND key = ?",
                    self.t("org_rows")
                ),
                vec![text(&org.0), text(kind), text(key)],
            )
            .await?;
        snapshot_of(org, &rows)
    }

    pub(super) fn static_update(&self, next: &Organization, expected: u64) -> (String, Vec<V>) {
        (
            format!(
                "UPDATE {} SET o_name = ?, o_slug = ?, o_logo = ?, o_metadata = ?, version = ?, \
                 member_count = ?, owner_count = ?, roles_version = ? WHERE org_id = ? \
                 IF version = ?",
                self.t("org_rows")
            ),
            vec![
                text(&next.name),
                text(&next.slug),
                otext(next.logo.as_deref()),
                otext(next.metadata.as_deref()),
                big(next.version as i64),
                int(next.member_count as i32),
                int(next.owner_count as i32),
                big(next.roles_version as i64),
                text(&next.id.0),
                big(expected as i64),
            ],
        )
    }

    pub(super) fn delete_row(&self, org: &OrgId, kind: &str, key: &str) -> (String, Vec<V>) {
        (
            format!(
                "DELETE FROM {} WHERE org_id = ? AND kind = ? AND key = ?",
                self.t("org_rows")
            ),
            vec![text(&org.0), text(kind), text(key)],
        )
    }

    pub(super) fn member_insert(&self, m: &Member) -> (String, Vec<V>) {
        (
            format!(
                "INSERT INTO {} (org_id, kind, key, id, user_id, role, team_id, created_at) \
                 VALUES (?, 'member', ?, ?, ?, ?, ?, ?)",
                self.t("org_rows")
            ),
            vec![
                text(&m.organization_id.0),
                text(&m.user_id.0),
                text(&m.id.0),
                text(&m.user_id.0),
                text(&m.role),
                otext(m.team_id.as_ref().map(|t| t.0.as_str())),
                ms(&m.created_at),
            ],
        )
    }

    pub(super) fn team_member_insert(&self, org: &OrgId, tm: &TeamMember) -> (String, Vec<V>) {
        (
            format!(
                "INSERT INTO {} (org_id, kind, key, id, team_id, user_id, created_at) \
                 VALUES (?, 'team_member', ?, ?, ?, ?, ?)",
                self.t("org_rows")
            ),
            vec![
                text(&org.0),
                text(&team_member_key(&tm.team_id, &tm.user_id)),
                text(&tm.id.0),
                text(&tm.team_id.0),
                text(&tm.user_id.0),
                ms(&tm.created_at),
            ],
        )
    }

    pub(super) fn role_insert(&self, r: &OrganizationRole) -> (String, Vec<V>) {
        (
            format!(
                "INSERT INTO {} (org_id, kind, key, id, name, permission, created_at, \
                 updated_at) VALUES (?, 'role', ?, ?, ?, ?, ?, ?)",
                self.t("org_rows")
            ),
            vec![
                text(&r.organization_id.0),
                text(&r.role),
                text(&r.id.0),
                text(&r.role),
                text(&r.permission),
                ms(&r.created_at),
                oms(&r.updated_at),
            ],
        )
    }

    pub(super) fn invitation_insert(&self, i: &Invitation) -> (String, Vec<V>) {
        (
            format!(
                "INSERT INTO {} (org_id, kind, key, id, email, role, status, team_id, \
                 inviter_id, expires_at, created_at) \
                 VALUES (?, 'invitation', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                self.t("org_rows")
            ),
            vec![
                text(&i.organization_id.0),
                text(&i.id.0),
                text(&i.id.0),
                text(&i.email),
                text(&i.role),
                text(i.status.as_str()),
                otext(i.team_id.as_ref().map(|t| t.0.as_str())),
                text(&i.inviter_id.0),
                ms(&i.expires_at),
                ms(&i.created_at),
            ],
        )
    }

    pub(super) fn team_insert(&self, t: &Team) -> (String, Vec<V>) {
        (
            format!(
                "INSERT INTO {} (org_id, kind, key, id, name, created_at, updated_at) \
                 VALUES (?, 'team', ?, ?, ?, ?, ?)",
                self.t("org_rows")
            ),
            vec![
                text(&t.organization_id.0),
                text(&t.id.0),
                text(&t.id.0),
                text(&t.name),
                ms(&t.created_at),
                oms(&t.updated_at),
            ],
        )
    }

    /// The statements of `changes`. Each change is checked against the partition as the
    /// changes before it in the unit leave it (as SQLite applies them one after another in a
    /// transaction); the batch's version condition guarantees the snapshot is still current
    /// when it applies. Rows are written once, as they end up: the statements of a batch share
    /// one timestamp, so two writes of one cell in it would be decided by value, not order.
    pub(super) fn plan(
        &self,
        id: &OrgId,
        snap: &Snapshot,
        changes: &[OrgChange],
    ) -> StoreResult<Plan> {
        let mut p = Plan::default();
        let mut w = snap.clone();
        let mut touched = std::collections::BTreeSet::new();
        for change in changes {
            self.check_and_look_up(id, &w, change, &mut p)?;
            w.apply(change, &mut touched);
        }
        for (kind, key) in touched {
            let row = match kind {
                "member" => w
                    .members
                    .iter()
                    .find(|m| m.user_id.0 == key)
                    .map(|m| self.member_insert(m)),
                "invitation" => w
                    .invitations
                    .iter()
                    .find(|i| i.id.0 == key)
                    .map(|i| self.invitation_insert(i)),
                "team" => w
                    .teams
                    .iter()
                    .find(|t| t.id.0 == key)
                    .map(|t| self.team_insert(t)),
                "team_member" => w
                    .team_members
                    .iter()
                    .find(|t| team_member_key(&t.team_id, &t.user_id) == key)
                    .map(|t| self.team_member_insert(id, t)),
                _ => w
                    .roles
                    .iter()
                    .find(|r| r.role == key)
                    .map(|r| self.role_insert(r)),
            };
            p.statements
                .push(row.unwrap_or_else(|| self.delete_row(id, kind, &key)));
        }
        Ok(p)
    }

    /// Checks one change against the partition `w` and records the lookups and follow-ups it
    /// needs in `p`.
    pub(super) fn check_and_look_up(
        &self,
        id: &OrgId,
        w: &Snapshot,
        change: &OrgChange,
        p: &mut Plan,
    ) -> StoreResult<()> {
        let member = |m: &MemberId| {
            w.members
                .iter()
                .find(|x| &x.id == m)
                .ok_or(StoreError::NotFound)
        };
        let team_exists = |t: &TeamId| w.teams.iter().any(|x| &x.id == t);
        match change {
            OrgChange::AddMember(m) => {
                if &m.organization_id != id {
                    return Err(StoreError::Internal(
                        "member of another organization".into(),
                    ));
                }
                if w.members.iter().any(|x| x.user_id == m.user_id) {
                    return Err(StoreError::Conflict("member"));
                }
                p.joins.push(m.user_id.clone());
            }
            OrgChange::SetMemberRole { member: m, .. } => {
                member(m)?;
            }
            OrgChange::RemoveMember(m) => {
                let m = member(m)?;
                for tm in w.team_members.iter().filter(|t| t.user_id == m.user_id) {
                    p.after
                        .push(self.team_lookup_delete(&m.user_id, &tm.team_id));
                }
                p.left.push(m.user_id.clone());
            }
            OrgChange::Invite(i) => {
                if &i.organization_id != id {
                    return Err(StoreError::Internal(
                        "invitation of another organization".into(),
                    ));
                }
                if w.invitations.iter().any(|x| x.id == i.id) {
                    return Err(StoreError::Conflict("invitation"));
                }
                p.after.push((
                    format!(
                        "INSERT INTO {} (id, org_id) VALUES (?, ?)",
                        self.t("invitations_by_id")
                    ),
                    vec![text(&i.id.0), text(&id.0)],
                ));
                p.after.push((
                    format!(
                        "INSERT INTO {} (email, id, org_id) VALUES (?, ?, ?)",
                        self.t("invitations_by_email")
                    ),
                    vec![text(&i.email.to_lowercase()), text(&i.id.0), text(&id.0)],
                ));
            }
            OrgChange::TransitionInvitation { id: inv, from, .. } => {
                let i = w
                    .invitations
                    .iter()
                    .find(|i| &i.id == inv)
                    .ok_or(StoreError::NotFound)?;
                if i.status != *from {
                    return Err(StoreError::Conflict("invitation"));
                }
            }
            OrgChange::CreateTeam(t) => {
                if &t.organization_id != id {
                    return Err(StoreError::Internal("team of another organization".into()));
                }
                if w.teams.iter().any(|x| x.name == t.name || x.id == t.id) {
                    return Err(StoreError::Conflict("team"));
                }
                p.after.push((
                    format!(
                        "INSERT INTO {} (id, org_id) VALUES (?, ?)",
                        self.t("teams_by_id")
                    ),
                    vec![text(&t.id.0), text(&id.0)],
                ));
            }
            OrgChange::UpdateTeam(t) => {
                if !team_exists(&t.id) {
                    return Err(StoreError::NotFound);
                }
                if w.teams.iter().any(|x| x.name == t.name && x.id != t.id) {
                    return Err(StoreError::Conflict("team"));
                }
            }
            OrgChange::DeleteTeam(team) => {
                if !team_exists(team) {
                    return Err(StoreError::NotFound);
                }
                for tm in w.team_members.iter().filter(|t| &t.team_id == team) {
                    p.after.push(self.team_lookup_delete(&tm.user_id, team));
                }
                p.after.push((
                    format!("DELETE FROM {} WHERE id = ?", self.t("teams_by_id")),
                    vec![text(&team.0)],
                ));
                p.cleared_teams.push(team.clone());
            }
            OrgChange::AddTeamMember(tm) => {
                if !team_exists(&tm.team_id) {
                    return Err(StoreError::NotFound);
                }
                if w.team_members
                    .iter()
                    .any(|x| x.team_id == tm.team_id && x.user_id == tm.user_id)
                {
                    return Err(StoreError::Conflict("team member"));
                }
                p.after.push((
                    format!(
                        "INSERT INTO {} (user_id, team_id, org_id) VALUES (?, ?, ?)",
                        self.t("team_members_by_user")
                    ),
                    vec![text(&tm.user_id.0), text(&tm.team_id.0), text(&id.0)],
                ));
            }
            OrgChange::RemoveTeamMember { team, user } => {
                if !team_exists(team)
                    || !w
                        .team_members
                        .iter()
                        .any(|x| &x.team_id == team && &x.user_id == user)
                {
                    return Err(StoreError::NotFound);
                }
                p.after.push(self.team_lookup_delete(user, team));
            }
            OrgChange::CreateRole(r) => {
                if &r.organization_id != id {
                    return Err(StoreError::Internal("role of another organization".into()));
                }
                if w.roles.iter().any(|x| x.role == r.role) {
                    return Err(StoreError::Conflict("role"));
                }
            }
            OrgChange::UpdateRole(r) => {
                let old = w
                    .roles
                    .iter()
                    .find(|x| x.id == r.id)
                    .ok_or(StoreError::NotFound)?;
                if old.role != r.role && w.roles.iter().any(|x| x.role == r.role) {
                    return Err(StoreError::Conflict("role"));
                }
            }
            OrgChange::DeleteRole(role) => {
                if !w.roles.iter().any(|x| &x.id == role) {
                    return Err(StoreError::NotFound);
                }
            }
        }
        Ok(())
    }
}
