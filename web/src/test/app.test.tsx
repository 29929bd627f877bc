import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { render, screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { beforeEach, expect, it, vi } from "vitest";
import { MemoryRouter } from "react-router";
import { App } from "../App";
import { mockServer, session } from "./helpers";

beforeEach(() => vi.unstubAllGlobals());

function renderApp(path: string) {
  const client = new QueryClient({ defaultOptions: { queries: { retry: false }, mutations: { retry: false } } });
  return render(
    <QueryClientProvider client={client}>
      <MemoryRouter initialEntries={[path]}>
        <App />
      </MemoryRouter>
    </QueryClientProvider>,
  );
}

const orgs = [
  { id: "o1", name: "Acme", slug: "acme", logo: null, metadata: null, createdAt: "2026-11-01T10:00:00.000Z" },
  { id: "o2", name: "Globex", slug: "globex", logo: null, metadata: null, createdAt: "2026-11-01T10:00:00.000Z" },
];

it("while impersonating, a banner on every page says who, and stops", async () => {
  let impersonating = true;
  const { sent } = mockServer({
    "GET /get-session": () => ({
      body: impersonating ? { ...session, session: { ...session.session, impersonatedBy: "root" } } : session,
    }),
    "GET /organization/list": () => ({ body: [] }),
    "POST /admin/stop-impersonating": () => {
      impersonating = false;
      return { body: session };
    },
    "GET /admin/list-users": () => ({ body: { users: [], total: 0, limit: 20, offset: 0 } }),
  });
  renderApp("/organizations");
  expect(await screen.findByRole("status")).toHaveTextContent("Acting as Ann (ann@example.com)");
  await userEvent.click(screen.getByRole("button", { name: "Stop impersonating" }));
  await waitFor(() => expect(screen.queryByText(/Acting as/)).toBeNull());
  expect(sent.some((s) => s.path === "/admin/stop-impersonating")).toBe(true);
  expect(await screen.findByRole("heading", { name: "Administration" })).toBeInTheDocument();
});

it("the header switches the active organization", async () => {
  let active: string | null = null;
  const { sent } = mockServer({
    "GET /get-session": () => ({ body: { ...session, session: { ...session.session, activeOrganizationId: active } } }),
    "GET /organization/list": () => ({ body: orgs }),
    "POST /organization/set-active": (body) => {
      active = (body as { organizationId: string | null }).organizationId;
      return { body: orgs.find((o) => o.id === active) ?? null };
    },
    "GET /list-sessions": () => ({ body: [session.session] }),
    "GET /list-accounts": () => ({ body: [] }),
    "GET /social-providers": () => ({ body: [] }),
  });
  renderApp("/account");
  const switcher = await screen.findByRole("combobox", { name: "Current organization" });
  await waitFor(() => expect(screen.getByRole("option", { name: "Globex" })).toBeInTheDocument());
  await userEvent.selectOptions(switcher, "o2");
  await waitFor(() => expect(switcher).toHaveValue("o2"));
  expect(sent.find((s) => s.path === "/organization/set-active")?.body).toEqual({ organizationId: "o2" });
  expect(screen.queryByRole("link", { name: "Admin" })).toBeNull();
});

it("unknown paths show a not-found page", async () => {
  mockServer({ "GET /get-session": () => ({ body: null }) });
  renderApp("/nowhere");
  expect(await screen.findByRole("heading", { name: "Page not found" })).toBeInTheDocument();
});

it("the page's title names its heading and the app; the header says who is signed in", async () => {
  mockServer({
    "GET /get-session": () => ({ body: session }),
    "GET /organization/list": () => ({ body: [] }),
    "GET /page-settings": () => ({ body: { appName: "Acme", emailVerification: { sendOnSignUp: false, required: false }, password: { minLength: 8, maxLength: 128 } } }),
  });
  renderApp("/organizations");
  await waitFor(() => expect(document.title).toBe("Organizations — Acme"));
  expect(screen.getByRole("link", { name: "Acme" })).toBeInTheDocument();
  expect(screen.getByText(/Signed in as/)).toHaveTextContent(`Signed in as ${session.user.name}`);
});

it("after a refused submit, focus goes to the first invalid field; after a navigation, to the heading", async () => {
  mockServer({ "GET /get-session": () => ({ body: null }), "GET /social-providers": () => ({ body: [] }) });
  renderApp("/sign-in");
  await userEvent.click(await screen.findByRole("button", { name: "Sign in" }));
  await waitFor(() => expect(screen.getByLabelText("Email")).toHaveFocus());
  await userEvent.click(screen.getByRole("link", { name: "Create an account" }));
  await waitFor(() => expect(screen.getByRole("heading", { name: "Create an account" })).toHaveFocus());
});
