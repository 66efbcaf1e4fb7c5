// Headless Chromium for the browser test and the benchmark (playwright-core drives Debian's chromium).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
// Known to work as root on a closed network: without the background-networking flags Chromium's own
// connections are refused and slow it down.
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export async function launch() {
  const { chromium } = await import('playwright-core');
  const profile = mkdtempSync(join(tmpdir(), 'lwx-chromium-'));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, args: CHROMIUM_ARGS, viewport: { width: 1200, height: 900 } });
  return { context, close: async () => { await context.close(); rmSync(profile, { recursive: true, force: true }); } };
}
