// What every page gets from the shell for people using a screen reader or a keyboard: a
// title naming the page (WCAG 2.4.2: the page's heading and the app's name), focus moved to
// the new page's heading after a navigation, and to the first invalid field after a refused
// submit.
import { useEffect, useRef } from "react";
import { useLocation } from "react-router";

/** `document.title` follows the heading of the page shown (`Heading — App`). */
export function usePageTitle(app: string) {
  const { pathname } = useLocation();
  useEffect(() => {
    const update = () => {
      const h1 = document.querySelector("main h1")?.textContent?.trim();
      const title = h1 ? `${h1} — ${app}` : app;
      if (document.title !== title) document.title = title;
    };
    update();
    // Headings change as pages load (an organization's name arrives after "Loading…").
    const watch = new MutationObserver(update);
    watch.observe(document.body, { subtree: true, childList: true, characterData: true });
    return () => watch.disconnect();
  }, [app, pathname]);
}

/** After a navigation (not the first page), focus moves to the new page's heading. */
export function useFocusOnNavigation() {
  const { pathname } = useLocation();
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    let tries = 0;
    const timer = setInterval(() => {
      const h1 = document.querySelector<HTMLElement>("main h1");
      if (h1 || ++tries > 20) clearInterval(timer);
      if (!h1) return;
      // A dialog or a field the person is in keeps its focus.
      if (document.activeElement && document.activeElement !== document.body) return;
      h1.tabIndex = -1;
      h1.focus();
    }, 50);
    return () => clearInterval(timer);
  }, [pathname]);
}

/** After a submit the page refused, focus goes to the first field it marked invalid. */
export function useFocusFirstInvalid() {
  useEffect(() => {
    const onSubmit = (e: Event) => {
      const form = e.target as HTMLFormElement;
      setTimeout(() => {
        form.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus();
      }, 0);
    };
    document.addEventListener("submit", onSubmit, true);
    return () => document.removeEventListener("submit", onSubmit, true);
  }, []);
}
