"use client";
/**
 * The main navigation. From 768 px up it is the sidebar; below, a bar with a "Menu" button
 * (aria-expanded, aria-controls) that opens the same list over the page. It closes on a link,
 * on Escape (focus back on the button) and when the path changes.
 */
import { usePathname } from "next/navigation";
import { useEffect, useRef, useState } from "react";
import { NavLink } from "./nav-link";

export function AppNav({ items }: { items: { href: string; label: string }[] }) {
  const [open, setOpen] = useState(false);
  const pathname = usePathname();
  const button = useRef<HTMLButtonElement>(null);
  const [shownFor, setShownFor] = useState(pathname);
  if (shownFor !== pathname) {
    // A navigation closes the menu (state adjusted during render, not in an effect).
    setShownFor(pathname);
    setOpen(false);
  }
  useEffect(() => {
    if (!open) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape") {
        setOpen(false);
        button.current?.focus();
      }
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [open]);
  return (
    <aside className="shrink-0 border-b border-slate-200 bg-white md:w-52 md:border-r md:border-b-0">
      <div className="flex items-center justify-between px-4 py-3 md:py-4">
        <span className="text-lg font-semibold tracking-tight text-indigo-700">Sluice</span>
        <button
          ref={button}
          type="button"
          className="btn md:hidden"
          aria-expanded={open}
          aria-controls="main-nav"
          onClick={() => setOpen((o) => !o)}
          data-testid="menu-button"
        >
          <span aria-hidden="true">{open ? "✕" : "☰"}</span> Menu
        </button>
      </div>
      <nav id="main-nav" aria-label="Main" className={`${open ? "flex" : "hidden"} flex-col gap-0.5 px-2 pb-3 md:flex`}>
        {items.map((item) => (
          <NavLink key={item.href} href={item.href}>
            {item.label}
          </NavLink>
        ))}
      </nav>
    </aside>
  );
}
