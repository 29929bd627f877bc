import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { render, screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { beforeEach, expect, it, vi } from "vitest";
import { MemoryRouter } from "react-router";
import { App } from "../App";
import { textOn } from "../brand";
import { SignIn } from "../pages/auth";
import { mockServer, renderAt, session, user } from "./helpers";

beforeEach(() => vi.unstubAllGlobals());

const branded = (ui: Record<string, string>) => () => ({
  body: {
    appName: "Acme",
    emailVerification: { sendOnSignUp: false, required: false },
    password: { minLength: 8, maxLength: 128 },
    byMail: false,
    trustedOrigins: [window.location.origin, "https://app.acme.example"],
    ...ui,
  },
});

it("the tenant's name, logo, colour and help address are on every page", async () => {
  mockServer({
    "GET /page-settings": branded({ logoUrl: "/favicon.svg", primaryColor: "#ffd43b", supportEmail: "help@acme.example" }),
    "GET /get-session": () => ({ body: null }),
    "GET /social-providers": () => ({ body: [] }),
  });
  const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  const page = render(
    <QueryClientProvider client={client}>
      <MemoryRouter initialEntries={["/sign-in"]}>
        <App />
      </MemoryRouter>
    </QueryClientProvider>,
  );
  const brand = await screen.findByRole("link", { name: "Acme" });
  await waitFor(() => expect(brand.querySelector("img")).toHaveAttribute("src", "/favicon.svg"));
  const root = document.documentElement.style;
  await waitFor(() => expect(root.getPropertyValue("--accent")).toBe("#ffd43b"));
  // A light colour gets dark text on its buttons.
  expect(root.getPropertyValue("--accent-fg")).toBe("#000");
  expect(screen.getByRole("link", { name: "help@acme.example" })).toHaveAttribute("href", "mailto:help@acme.example");
  await waitFor(() => expect(document.title).toBe("Sign in — Acme"));
  page.unmount();
  expect(root.getPropertyValue("--accent")).toBe("");
});

it("the text on a colour is the one that reads better", () => {
  expect(textOn("#000")).toBe("#fff");
  expect(textOn("#3b5bdb")).toBe("#fff");
  expect(textOn("#fff")).toBe("#000");
  expect(textOn("#ffd43b")).toBe("#000");
});

it("a sign-in without redirectTo goes to the tenant's home: a path here, or its app", async () => {
  for (const home of ["/organizations", "https://app.acme.example/welcome"]) {
    let signedIn = false;
    const assign = vi.fn();
    vi.stubGlobal("location", { ...window.location, assign, origin: window.location.origin });
    const { sent } = mockServer({
      "GET /page-settings": branded({ homeUrl: home }),
      "GET /social-providers": () => ({ body: [] }),
      "POST /sign-in/email": () => {
        signedIn = true;
        return { body: { redirect: false, token: "t", url: null, user } };
      },
      "GET /get-session": () => ({ body: signedIn ? session : null }),
    });
    const page = renderAt("/sign-in", [
      { path: "/sign-in", element: <SignIn /> },
      { path: "/organizations", element: <p>organizations page</p> },
      { path: "/account", element: <p>account page</p> },
    ]);
    await userEvent.type(screen.getByLabelText("Email"), "ann@example.com");
    await userEvent.type(screen.getByLabelText("Password"), "correct-horse");
    await userEvent.click(screen.getByRole("button", { name: "Sign in" }));
    if (home.startsWith("/")) expect(await screen.findByText("organizations page")).toBeInTheDocument();
    else await waitFor(() => expect(assign).toHaveBeenCalledWith(home));
    // The server's settings outlive the sign-in: asked once.
    expect(sent.filter((x) => x.path === "/page-settings")).toHaveLength(1);
    page.unmount();
    vi.unstubAllGlobals();
  }
});
