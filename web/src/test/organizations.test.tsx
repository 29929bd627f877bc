import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { beforeEach, expect, it, vi } from "vitest";
import { AcceptInvitation, OrganizationPage, Organizations } from "../pages/organizations";
import { mockServer, renderAt, session } from "./helpers";

beforeEach(() => vi.unstubAllGlobals());

const catalog = {
  resources: [
    { resource: "member", actions: ["create", "update", "delete"] },
    { resource: "invitation", actions: ["create", "cancel"] },
  ],
  roles: [
    { role: "owner", builtIn: true, permission: { member: ["create", "update", "delete"] } },
    { role: "admin", builtIn: true, permission: { member: ["create", "update", "delete"] } },
    { role: "member", builtIn: true, permission: {} },
  ],
  ownerOnly: { organization: ["delete"] },
};

const org = {
  id: "o1",
  name: "Acme",
  slug: "acme",
  logo: null,
  metadata: null,
  createdAt: "2026-11-01T10:00:00.000Z",
  members: [
    { id: "m1", organizationId: "o1", userId: "u1", role: "owner", teamId: null, createdAt: "2026-11-01T10:00:00.000Z", user: { id: "u1", name: "Ann", email: "ann@example.com", image: null } },
    { id: "m2", organizationId: "o1", userId: "u2", role: "member", teamId: null, createdAt: "2026-11-01T10:00:00.000Z", user: { id: "u2", name: "Bob", email: "bob@example.com", image: null } },
  ],
  invitations: [],
  teams: [],
};

it("create: the slug follows the name and is checked as you type", async () => {
  const { sent } = mockServer({
    "GET /get-session": () => ({ body: session }),
    "GET /organization/list": () => ({ body: [] }),
    "GET /organization/list-user-invitations": () => ({ body: [] }),
    "POST /organization/check-slug": (body) =>
      (body as { slug: string }).slug === "acme" ? { status: 400, body: { code: "SLUG_IS_TAKEN", message: "slug is taken" } } : { body: { status: true } },
    "POST /organization/create": () => ({ body: { ...org, id: "o2" } }),
  });
  renderAt("/organizations", [
    { path: "/organizations", element: <Organizations /> },
    { path: "/organizations/:id", element: <p>org page</p> },
  ]);
  const name = await screen.findByLabelText("Name");
  await userEvent.type(name, "Acme");
  expect(screen.getByLabelText("Slug")).toHaveValue("acme");
  expect(await screen.findByText("That slug is taken.")).toBeInTheDocument();
  expect(screen.getByRole("button", { name: "Create organization" })).toBeDisabled();
  await userEvent.type(name, " Labs");
  expect(await screen.findByText("✓ acme-labs is available")).toBeInTheDocument();
  await userEvent.clear(screen.getByLabelText("Slug"));
  await userEvent.type(screen.getByLabelText("Slug"), "Bad Slug");
  expect(screen.getByText("Use 1–64 lowercase letters, digits, - or _.")).toBeInTheDocument();
  await userEvent.clear(screen.getByLabelText("Slug"));
  await userEvent.type(screen.getByLabelText("Slug"), "acme-labs");
  await waitFor(() => expect(screen.getByRole("button", { name: "Create organization" })).toBeEnabled());
  await userEvent.click(screen.getByRole("button", { name: "Create organization" }));
  expect(await screen.findByText("org page")).toBeInTheDocument();
  expect(sent.find((s) => s.path === "/organization/create")?.body).toEqual({ name: "Acme Labs", slug: "acme-labs" });
});

const ALL = {
  organization: ["update", "delete"],
  member: ["create", "update", "delete"],
  invitation: ["create", "cancel"],
  team: ["create", "update", "delete"],
  ac: ["create", "read", "update", "delete"],
};

function orgServer(granted: Record<string, string[]>, extra: Parameters<typeof mockServer>[0] = {}) {
  return mockServer({
    "GET /get-session": () => ({ body: session }),
    "GET /organization/get-full-organization": () => ({ body: org }),
    "GET /organization/permission-catalog": () => ({ body: catalog }),
    "GET /organization/list-roles": () => ({ body: [] }),
    "GET /organization/list-invitations": () => ({ body: [] }),
    "GET /organization/get-member-permissions": () => ({ body: { role: "owner", permissions: granted } }),
    ...extra,
  });
}

const orgRoutes = [
  { path: "/organizations/:id", element: <OrganizationPage /> },
  { path: "/organizations/:id/:tab", element: <OrganizationPage /> },
];

it("members: buttons follow the member's permissions, asked once", async () => {
  const first = orgServer({});
  const view = renderAt("/organizations/o1", orgRoutes);
  const bob = await screen.findByRole("row", { name: /Bob/ });
  expect(within(bob).queryByRole("combobox")).toBeNull();
  expect(within(bob).queryByRole("button", { name: "Remove" })).toBeNull();
  expect(first.sent.filter((s) => s.path === "/organization/get-member-permissions")).toHaveLength(1);
  expect(first.sent.some((s) => s.path === "/organization/has-permission")).toBe(false);
  view.unmount();
  const { sent } = orgServer(ALL, { "POST /organization/update-member-role": () => ({ body: org.members[1] }) });
  renderAt("/organizations/o1", orgRoutes);
  const select = await screen.findByRole("combobox", { name: "Role of Bob" });
  expect(within(screen.getByRole("row", { name: /Bob/ })).getByRole("button", { name: "Remove" })).toBeInTheDocument();
  await userEvent.selectOptions(select, "admin");
  // Nothing is sent before the change is confirmed.
  const dialog = screen.getByRole("dialog", { name: "Make Bob admin?" });
  expect(sent.some((s) => s.path === "/organization/update-member-role")).toBe(false);
  await userEvent.click(within(dialog).getByRole("button", { name: "Change role" }));
  await waitFor(() => expect(sent.find((s) => s.path === "/organization/update-member-role")?.body).toEqual({ organizationId: "o1", memberId: "m2", role: "admin" }));
  expect(await screen.findByText("Bob is now admin.")).toBeInTheDocument();
});

it("invitations: validates the address and shows the server's refusal", async () => {
  const { sent } = orgServer(ALL, {
    "POST /organization/invite-member": () => ({ status: 400, body: { code: "USER_IS_ALREADY_A_MEMBER_OF_THIS_ORGANIZATION", message: "User is already a member of this organization" } }),
  });
  renderAt("/organizations/o1/invitations", orgRoutes);
  await userEvent.click(await screen.findByRole("button", { name: "Send invitation" }));
  expect(screen.getByText("Enter your email address.")).toBeInTheDocument();
  expect(sent.some((s) => s.path === "/organization/invite-member")).toBe(false);
  await userEvent.type(screen.getByLabelText("Email to invite"), "bob@example.com");
  await userEvent.selectOptions(screen.getByLabelText("Role"), "admin");
  await userEvent.click(screen.getByRole("button", { name: "Send invitation" }));
  expect(await screen.findByRole("alert")).toHaveTextContent("User is already a member of this organization.");
  expect(sent.find((s) => s.path === "/organization/invite-member")?.body).toEqual({ organizationId: "o1", email: "bob@example.com", role: "admin" });
});

it("roles: the editor offers the catalogue's resource × action checkboxes", async () => {
  const { sent } = orgServer(ALL, {
    "POST /organization/create-role": () => ({
      body: {
        success: true,
        roleData: { id: "r1", organizationId: "o1", role: "recruiter", permission: { invitation: ["create"] }, createdAt: "2026-11-01T10:00:00.000Z", updatedAt: null },
        statements: { invitation: ["create"] },
      },
    }),
  });
  renderAt("/organizations/o1/roles", orgRoutes);
  await userEvent.click(await screen.findByRole("button", { name: "New role" }));
  expect(screen.getAllByRole("checkbox")).toHaveLength(5);
  await userEvent.type(screen.getByLabelText("Role name"), "recruiter");
  const creates = screen.getAllByRole("checkbox", { name: "create" });
  await userEvent.click(creates[1]!);
  await userEvent.click(screen.getByRole("button", { name: "Create role" }));
  await waitFor(() =>
    expect(sent.find((s) => s.path === "/organization/create-role")?.body).toEqual({ organizationId: "o1", role: "recruiter", permission: { invitation: ["create"] } }),
  );
});

it("accept-invitation: signed out, offers sign-in and sign-up that come back", async () => {
  mockServer({ "GET /get-session": () => ({ body: null }) });
  renderAt("/accept-invitation/inv1", [{ path: "/accept-invitation/:id", element: <AcceptInvitation /> }]);
  const signIn = await screen.findByRole("link", { name: "Sign in" });
  expect(signIn.getAttribute("href")).toBe("/sign-in?redirectTo=%2Faccept-invitation%2Finv1");
  expect(screen.getByRole("link", { name: "Create an account" }).getAttribute("href")).toBe("/sign-up?redirectTo=%2Faccept-invitation%2Finv1");
});

it("accept-invitation: signed in as someone else, offers to sign out", async () => {
  let signedIn = true;
  const { sent } = mockServer({
    "GET /get-session": () => ({ body: signedIn ? session : null }),
    "GET /organization/get-invitation": () => ({
      status: 403,
      body: { code: "YOU_ARE_NOT_THE_RECIPIENT_OF_THE_INVITATION", message: "You are not the recipient of the invitation" },
    }),
    "POST /sign-out": () => {
      signedIn = false;
      return { body: { success: true } };
    },
  });
  renderAt("/accept-invitation/inv1", [{ path: "/accept-invitation/:id", element: <AcceptInvitation /> }]);
  expect(await screen.findByRole("alert")).toHaveTextContent("You are not the recipient of the invitation.");
  await userEvent.click(screen.getByRole("button", { name: "Sign out and use the invited account" }));
  expect(await screen.findByRole("heading", { name: "Your invitation" })).toBeInTheDocument();
  expect(sent.some((s) => s.path === "/sign-out")).toBe(true);
});

it("only what the server would allow is offered: the only owner cannot leave, an admin cannot remove the owner or invite owners, sections need their permissions", async () => {
  // Ann (u1, the session's user) is the only owner: no Leave, a hint instead.
  const owner = orgServer(ALL);
  const view = renderAt("/organizations/o1", orgRoutes);
  const ann = await screen.findByRole("row", { name: /Ann/ });
  expect(within(ann).queryByRole("button", { name: "Leave" })).toBeNull();
  expect(within(ann).getByText(/Only owner/)).toBeInTheDocument();
  expect(owner.sent.length).toBeGreaterThan(0);
  view.unmount();
  // Ann as an admin beside Bob the owner: Bob's role and removal are not hers to change, and
  // she may not invite owners.
  const asAdmin = {
    ...org,
    members: [
      { ...org.members[0]!, role: "admin" },
      { ...org.members[1]!, role: "owner" },
    ],
  };
  orgServer(ALL, { "GET /organization/get-full-organization": () => ({ body: asAdmin }) });
  const second = renderAt("/organizations/o1", orgRoutes);
  const bob = await screen.findByRole("row", { name: /Bob/ });
  expect(within(bob).queryByRole("button", { name: "Remove" })).toBeNull();
  expect(within(bob).queryByRole("combobox")).toBeNull();
  expect(within(screen.getByRole("row", { name: /Ann/ })).getByRole("button", { name: "Leave" })).toBeInTheDocument();
  second.unmount();
  orgServer(ALL, { "GET /organization/get-full-organization": () => ({ body: asAdmin }) });
  const third = renderAt("/organizations/o1/invitations", orgRoutes);
  const role = await screen.findByLabelText("Role");
  await waitFor(() => expect(within(role).getAllByRole("option").map((o) => o.textContent)).toEqual(["admin", "member"]));
  third.unmount();
  // A member without ac:read or organization rights: no Roles or Settings tab.
  orgServer({ member: ["create"] });
  renderAt("/organizations/o1", orgRoutes);
  const tabs = await screen.findByRole("navigation", { name: "Organization sections" });
  await waitFor(() => expect(within(tabs).getAllByRole("link").map((l) => l.textContent)).toEqual(["Members", "Invitations", "Teams"]));
});

it("invitations for you name the organization; an unverified address is told why none show", async () => {
  const listing = (verified: boolean) =>
    mockServer({
      "GET /get-session": () => ({ body: session }),
      "GET /organization/list": () => ({ body: [] }),
      "GET /organization/list-user-invitations": () =>
        verified
          ? { body: [{ id: "i1", organizationId: "o1", organizationName: "Acme", email: "ann@example.com", role: "admin", status: "pending", teamId: null, inviterId: "u9", expiresAt: "2026-12-01T10:00:00.000Z", createdAt: "2026-11-20T10:00:00.000Z" }] }
          : { status: 403, body: { code: "EMAIL_VERIFICATION_REQUIRED_FOR_INVITATION", message: "x" } },
    });
  listing(true);
  const first = renderAt("/organizations", [{ path: "/organizations", element: <Organizations /> }]);
  const section = await screen.findByRole("region", { name: "Invitations for you" });
  expect(section).toHaveTextContent("Acme invites you as admin");
  expect(within(section).getByRole("link", { name: "Open the invitation to Acme" })).toHaveAttribute("href", "/accept-invitation/i1");
  first.unmount();
  listing(false);
  renderAt("/organizations", [{ path: "/organizations", element: <Organizations /> }]);
  expect(await screen.findByText(/show here once it is verified/)).toBeInTheDocument();
});

it("teams: an owner outside a team sees its members, is offered only the others, and not to make it her team", async () => {
  const withTeam = { ...org, teams: [{ id: "t1", name: "Core", organizationId: "o1", createdAt: "2026-11-01T10:00:00.000Z", updatedAt: "2026-11-01T10:00:00.000Z", memberCount: 1 }] };
  orgServer(ALL, {
    "GET /organization/get-full-organization": () => ({ body: withTeam }),
    "GET /organization/list-teams": () => ({ body: withTeam.teams }),
    "GET /organization/list-team-members": () => ({ body: [{ id: "tm1", teamId: "t1", userId: "u2", createdAt: "2026-11-01T10:00:00.000Z" }] }),
  });
  renderAt("/organizations/o1/teams", orgRoutes);
  await userEvent.click(await screen.findByRole("button", { name: "Manage" }));
  const list = await screen.findByRole("list", { name: "Members of Core" });
  expect(await within(list).findByText("Bob")).toBeInTheDocument();
  const add = screen.getByLabelText("Add a member");
  expect(within(add).getAllByRole("option").map((o) => o.textContent)).toEqual(["Choose…", "Ann"]);
  expect(screen.queryByRole("button", { name: "Make it my active team" })).toBeNull();
});
