import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { beforeEach, expect, it, vi } from "vitest";
import { ACTIONS } from "../components/audit";
import { Admin } from "../pages/admin";
import { OrganizationPage } from "../pages/organizations";
import { mockServer, renderAt, session, user } from "./helpers";

beforeEach(() => vi.unstubAllGlobals());

const admin = { ...session, user: { ...user, role: "admin" } };

function event(i: number, over: Record<string, unknown> = {}) {
  return {
    id: `e${i}`,
    at: "2026-11-24T10:00:00.000Z",
    action: "user.sign-in",
    outcome: "success",
    reason: null,
    actorId: "u1",
    userId: "u1",
    organizationId: null,
    target: null,
    ipAddress: "192.0.2.1",
    userAgent: null,
    requestId: `r${i}`,
    details: {},
    ...over,
  };
}

it("the admin's audit log: pages by cursor, filters by kind and outcome, failures say why", async () => {
  const first = Array.from({ length: 50 }, (_, i) => event(i));
  const { sent } = mockServer({
    "GET /get-session": () => ({ body: admin }),
    "GET /admin/list-users": () => ({ body: { users: [], total: 0, limit: 20, offset: 0 } }),
    "GET /admin/audit-log": (_b, url) => {
      if (url.searchParams.get("cursor") === "c1")
        return { body: { events: [event(99, { action: "user.sign-in", outcome: "failure", reason: "INVALID_EMAIL_OR_PASSWORD", actorId: null })], nextCursor: null } };
      if (url.searchParams.get("action") === "member")
        return { body: { events: [event(7, { action: "member.added", actorId: "someone-else-123", details: { role: "admin" } })], nextCursor: null } };
      return { body: { events: first, nextCursor: "c1" } };
    },
  });
  renderAt("/admin", [{ path: "/admin", element: <Admin /> }]);
  const log = (await screen.findByRole("heading", { name: "Audit log" })).closest("section")!;
  expect(await within(log).findAllByText("Signed in")).toHaveLength(50);
  expect(within(log).getAllByText("you")).toHaveLength(50);
  await userEvent.click(within(log).getByRole("button", { name: "Show older" }));
  // The reason in words, its code kept in the tooltip.
  const failed = await within(log).findByText("failed: The email or the password is wrong.");
  expect(failed).toHaveAttribute("title", "INVALID_EMAIL_OR_PASSWORD");
  expect(within(log).queryByRole("button", { name: "Show older" })).not.toBeInTheDocument();
  const asked = sent.filter((s) => s.path === "/admin/audit-log");
  expect(asked).toHaveLength(2);
  await userEvent.selectOptions(within(log).getByLabelText("Show"), "member");
  expect(await within(log).findByText("Added a member")).toBeInTheDocument();
  expect(within(log).getByText("someone-…")).toBeInTheDocument();
  expect(within(log).getByText("user: you · role: admin")).toBeInTheDocument();
});

it("an organization's Activity tab is there for those who may update it, and asks for its log only", async () => {
  const bea = { ...user, id: "u2", name: "Bea", email: "bea@example.com" };
  const member = { id: "m2", organizationId: "o1", userId: "u2", role: "member", teamId: null, createdAt: "2026-11-01T10:00:00.000Z", user: bea };
  const org = { id: "o1", name: "Acme", slug: "acme", logo: null, metadata: null, createdAt: "2026-11-01T10:00:00.000Z", members: [member], invitations: [], teams: [] };
  const { sent } = mockServer({
    "GET /get-session": () => ({ body: session }),
    "GET /organization/get-full-organization": () => ({ body: org }),
    "GET /organization/get-member-permissions": () => ({ body: { role: "admin", permissions: { organization: ["update"] } } }),
    "GET /organization/list-members": () => ({ body: { members: [], total: 0 } }),
    "GET /organization/audit-log": () => ({
      body: { events: [event(1, { action: "member.added", organizationId: "o1", actorId: "u1", userId: "u2" })], nextCursor: null },
    }),
  });
  renderAt("/organizations/o1/activity", [{ path: "/organizations/:id/:tab", element: <OrganizationPage /> }]);
  expect(await screen.findByRole("link", { name: "Activity" })).toBeInTheDocument();
  expect(await screen.findByText("Added a member")).toBeInTheDocument();
  // Members are named, not shown by id.
  expect(screen.getByText("user: Bea")).toBeInTheDocument();
  const asked = sent.find((s) => s.path === "/organization/audit-log");
  expect(asked).toBeDefined();
});

it("a member without the permission sees no Activity tab", async () => {
  const org = { id: "o1", name: "Acme", slug: "acme", logo: null, metadata: null, createdAt: "2026-11-01T10:00:00.000Z", members: [], invitations: [], teams: [] };
  mockServer({
    "GET /get-session": () => ({ body: session }),
    "GET /organization/get-full-organization": () => ({ body: org }),
    "GET /organization/get-member-permissions": () => ({ body: { role: "member", permissions: {} } }),
    "GET /organization/list-members": () => ({ body: { members: [], total: 0 } }),
  });
  renderAt("/organizations/o1/members", [{ path: "/organizations/:id/:tab", element: <OrganizationPage /> }]);
  expect(await screen.findByRole("link", { name: "Members" })).toBeInTheDocument();
  expect(screen.queryByRole("link", { name: "Activity" })).not.toBeInTheDocument();
});

it("every action the server records reads as a sentence", () => {
  // Complete by type (Record<AuditAction, string>); each a sentence.
  for (const label of Object.values(ACTIONS)) expect(label).toMatch(/^[A-Z]/);
});
