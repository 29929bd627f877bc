//! Organizations, and every change inside one (members, invitations, teams, roles) applied
//! under the organization's version.
use super::*;
use crate::*;
use rusqlite::{params, Connection, OptionalExtension};

/// One change inside organization `org`, in the caller's transaction. Rows of another
/// organization are never touched (their ids are "not found" here).
fn apply_change(tx: &Connection, org: &str, change: &OrgChange) -> StoreResult<()> {
    match change {
        OrgChange::AddMember(m) => {
            if m.organization_id.0 != org {
                return Err(StoreError::Internal("member of another organization".into()));
            }
            insert_member(tx, m)?;
            bump_user(tx, &m.user_id.0)
        }
        OrgChange::SetMemberRole { member, role } => touched(
            tx.exec(
                "UPDATE members SET role = ?3 WHERE id = ?1 AND organization_id = ?2",
                [&member.0, org, role],
            )
            .map_err(map_err)?,
        ),
        OrgChange::RemoveMember(member) => {
            let m = one(
                tx,
                &format!(
                    "SELECT {MEMBER_COLS} FROM members WHERE id = ?1 AND organization_id = ?2"
                ),
                [&member.0, org],
                member_row,
            )?
            .ok_or(StoreError::NotFound)?;
            tx.exec(
                "DELETE FROM team_members WHERE user_id = ?1 AND team_id IN \
                 (SELECT id FROM teams WHERE organization_id = ?2)",
                [&m.user_id.0, org],
            )
            .map_err(map_err)?;
            tx.exec("DELETE FROM members WHERE id = ?1", [&member.0])
                .map_err(map_err)?;
            tx.exec(
                "UPDATE sessions SET active_organization_id = NULL, active_team_id = NULL \
                 WHERE user_id = ?1 AND active_organization_id = ?2",
                [&m.user_id.0, org],
            )
            .map_err(map_err)?;
            Ok(())
        }
        OrgChange::Invite(i) => {
            if i.organization_id.0 != org {
                return Err(StoreError::Internal(
                    "invitation of another organization".into(),
                ));
            }
            tx.exec(
                &format!(
                    "INSERT INTO invitations ({INVITATION_COLS}) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)"
                ),
                params![
                    i.id.0,
                    i.organization_id.0,
                    i.email,
                    i.role,
                    i.status.as_str(),
                    i.team_id.as_ref().map(|t| &t.0),
                    i.inviter_id.0,
                    ms(&i.expires_at),
                    ms(&i.created_at)
                ],
            )
            .map_err(unique("invitation"))?;
            Ok(())
        }
        OrgChange::TransitionInvitation { id, from, to } => {
            let n = tx
                .exec(
                    "UPDATE invitations SET status = ?4 \
                     WHERE id = ?1 AND organization_id = ?2 AND status = ?3",
                    [&id.0, org, from.as_str(), to.as_str()],
                )
                .map_err(map_err)?;
            if n > 0 {
                return Ok(());
            }
            let exists: Option<i64> = tx
                .query_row(
                    "SELECT 1 FROM invitations WHERE id = ?1 AND organization_id = ?2",
                    [&id.0, org],
                    |r| r.get(0),
                )
                .optional()
                .map_err(map_err)?;
            Err(match exists {
                Some(_) => StoreError::Conflict("invitation"),
                None => StoreError::NotFound,
            })
        }
        OrgChange::CreateTeam(t) => {
            if t.organization_id.0 != org {
                return Err(StoreError::Internal("team of another organization".into()));
            }
            tx.exec(
                &format!("INSERT INTO teams ({TEAM_COLS}) VALUES (?1,?2,?3,?4,?5)"),
                params![
                    t.id.0,
                    t.name,
                    t.organization_id.0,
                    ms(&t.created_at),
                    ms_opt(&t.updated_at)
                ],
            )
            .map_err(unique("team"))?;
            Ok(())
        }
        OrgChange::UpdateTeam(t) => touched(
            tx.exec(
                "UPDATE teams SET name = ?3, updated_at = ?4 WHERE id = ?1 AND organization_id = ?2",
                params![t.id.0, org, t.name, ms_opt(&t.updated_at)],
            )
            .map_err(unique("team"))?,
        ),
        OrgChange::DeleteTeam(team) => {
            touched(
                tx.exec(
                    "DELETE FROM teams WHERE id = ?1 AND organization_id = ?2",
                    [&team.0, org],
                )
                .map_err(map_err)?,
            )?;
            tx.exec(
                "UPDATE members SET team_id = NULL WHERE team_id = ?1",
                [&team.0],
            )
            .map_err(map_err)?;
            tx.exec(
                "UPDATE sessions SET active_team_id = NULL WHERE active_team_id = ?1",
                [&team.0],
            )
            .map_err(map_err)?;
            Ok(())
        }
        OrgChange::AddTeamMember(t) => {
            in_org(tx, "teams", &t.team_id.0, org)?;
            tx.exec(
                "INSERT INTO team_members (id, team_id, user_id, created_at) VALUES (?1,?2,?3,?4)",
                params![t.id.0, t.team_id.0, t.user_id.0, ms(&t.created_at)],
            )
            .map_err(unique("team member"))?;
            Ok(())
        }
        OrgChange::RemoveTeamMember { team, user } => {
            in_org(tx, "teams", &team.0, org)?;
            touched(
                tx.exec(
                    "DELETE FROM team_members WHERE team_id = ?1 AND user_id = ?2",
                    [&team.0, &user.0],
                )
                .map_err(map_err)?,
            )
        }
        OrgChange::CreateRole(r) => {
            if r.organization_id.0 != org {
                return Err(StoreError::Internal("role of another organization".into()));
            }
            tx.exec(
                &format!("INSERT INTO organization_roles ({ROLE_COLS}) VALUES (?1,?2,?3,?4,?5,?6)"),
                params![
                    r.id.0,
                    r.organization_id.0,
                    r.role,
                    r.permission,
                    ms(&r.created_at),
                    ms_opt(&r.updated_at)
                ],
            )
            .map_err(unique("role"))?;
            Ok(())
        }
        OrgChange::UpdateRole(r) => touched(
            tx.exec(
                "UPDATE organization_roles SET role = ?3, permission = ?4, updated_at = ?5 \
                 WHERE id = ?1 AND organization_id = ?2",
                params![r.id.0, org, r.role, r.permission, ms_opt(&r.updated_at)],
            )
            .map_err(unique("role"))?,
        ),
        OrgChange::DeleteRole(id) => touched(
            tx.exec(
                "DELETE FROM organization_roles WHERE id = ?1 AND organization_id = ?2",
                [&id.0, org],
            )
            .map_err(map_err)?,
        ),
    }
}

/// `NotFound` unless row `id` of `table` belongs to organization `org`.
fn in_org(tx: &Connection, table: &str, id: &str, org: &str) -> StoreResult<()> {
    let found: Option<i64> = tx
        .query_row(
            &format!("SELECT 1 FROM {table} WHERE id = ?1 AND organization_id = ?2"),
            [id, org],
            |r| r.get(0),
        )
        .optional()
        .map_err(map_err)?;
    found.map(|_| ()).ok_or(StoreError::NotFound)
}

#[async_trait]
impl OrganizationStore for SqliteStore {
    async fn create_organization(
        &self,
        org: &Organization,
        owner: &Member,
        creator_version: Option<u64>,
        events: &[Event],
    ) -> StoreResult<()> {
        let (o, m) = (org.clone(), owner.clone());
        self.write_with(events, always, move |c| {
            let tx = Savepoint::new(c)?;
            match creator_version {
                Some(v) => {
                    let n = tx
                        .exec(
                            "UPDATE users SET version = version + 1 WHERE id = ?1 AND version = ?2",
                            params![m.user_id.0, v as i64],
                        )
                        .map_err(map_err)?;
                    if n == 0 {
                        return Err(user_moved_or_gone(&tx, &m.user_id.0)?);
                    }
                }
                None => bump_user(&tx, &m.user_id.0)?,
            }
            tx.exec(
                &format!(
                    "INSERT INTO organizations ({ORG_COLS}) VALUES (?1,?2,?3,?4,?5,?6,0,?7,?8,0)"
                ),
                params![
                    o.id.0,
                    o.name,
                    o.slug,
                    o.logo,
                    o.metadata,
                    ms(&o.created_at),
                    o.member_count,
                    o.owner_count
                ],
            )
            .map_err(unique("slug"))?;
            insert_member(&tx, &m)?;
            tx.commit()
        })
        .await
    }

    async fn get_organization(&self, id: &OrgId) -> StoreResult<Option<Organization>> {
        let id = id.0.clone();
        self.point_read(move |c| {
            one(
                c,
                &format!("SELECT {ORG_COLS} FROM organizations WHERE id = ?1"),
                [id],
                org_row,
            )
        })
        .await
    }

    async fn get_organization_by_slug(&self, slug: &str) -> StoreResult<Option<Organization>> {
        let s = slug.to_owned();
        self.read(move |c| {
            one(
                c,
                &format!("SELECT {ORG_COLS} FROM organizations WHERE slug = ?1"),
                [s],
                org_row,
            )
        })
        .await
    }

    async fn change_organization(
        &self,
        next: &Organization,
        changes: &[OrgChange],
        events: &[Event],
    ) -> StoreResult<()> {
        let (o, changes) = (next.clone(), changes.to_vec());
        let expected = next
            .version
            .checked_sub(1)
            .ok_or_else(|| StoreError::Internal("a changed organization's version is 0".into()))?;
        self.write_with(events, always, move |c| {
            let tx = Savepoint::new(c)?;
            // The slug apart, and only when it changed: a column an UPDATE sets has its index
            // entry rewritten even when the value stays (one more page per organization write).
            let slug: Option<String> = one(
                &tx,
                "UPDATE organizations SET name=?2, logo=?3, metadata=?4, version=?5, \
                 member_count=?6, owner_count=?7, roles_version=?8 WHERE id=?1 AND version=?9 \
                 RETURNING slug",
                params![
                    o.id.0,
                    o.name,
                    o.logo,
                    o.metadata,
                    o.version as i64,
                    o.member_count,
                    o.owner_count,
                    o.roles_version as i64,
                    expected as i64
                ],
                |r| r.get(0),
            )?;
            set_unique_if_changed(&tx, "organizations", "slug", &o.id.0, slug, &o.slug)?;
            for change in &changes {
                apply_change(&tx, &o.id.0, change)?;
            }
            tx.commit()
        })
        .await
    }

    async fn delete_organization(
        &self,
        id: &OrgId,
        expected: u64,
        events: &[Event],
    ) -> StoreResult<()> {
        let id = id.0.clone();
        self.write_with(events, always, move |c| {
            let tx = Savepoint::new(c)?;
            // Sessions that had it active lose it (spec §4: deletion clears the active org).
            tx.exec(
                "UPDATE sessions SET active_organization_id = NULL, active_team_id = NULL \
                 WHERE active_organization_id = ?1",
                [&id],
            )
            .map_err(map_err)?;
            let n = tx
                .exec(
                    "DELETE FROM organizations WHERE id = ?1 AND version = ?2",
                    params![id, expected as i64],
                )
                .map_err(map_err)?;
            if n == 0 {
                return Err(moved_or_gone(&tx, "organizations", "id", &id)?);
            }
            tx.commit()
        })
        .await
    }

    async fn list_user_organizations(&self, user_id: &UserId) -> StoreResult<Vec<Organization>> {
        let id = user_id.0.clone();
        self.read(move |c| {
            all(
                c,
                "SELECT o.id, o.name, o.slug, o.logo, o.metadata, o.created_at, o.version, \
                 o.member_count, o.owner_count, o.roles_version FROM organizations o \
                 JOIN members m ON m.organization_id = o.id WHERE m.user_id = ?1 \
                 ORDER BY o.created_at, o.id",
                [id],
                org_row,
            )
        })
        .await
    }

    async fn count_user_organizations(&self, user: &UserId) -> StoreResult<u64> {
        let id = user.0.clone();
        self.read(move |c| {
            c.query_row(
                "SELECT COUNT(*) FROM members WHERE user_id = ?1",
                [id],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n as u64)
            .map_err(map_err)
        })
        .await
    }
}
