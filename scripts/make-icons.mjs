#!/usr/bin/env node
// Renders resources/icon.svg into the PNG and ICO files the app ships (run by hand after editing the
// SVG; the outputs are committed): the window and tray icons, and the viewer's favicon. Chromium draws
// the SVG (Playwright with Debian's Chromium), so no image tool is needed.
import { chromium } from '@playwright/test';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from './build.mjs';

const svg = readFileSync(join(root, 'resources/icon.svg'), 'utf8');
const browser = await chromium.launch({ executablePath: process.env.PTYDECK_CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
const page = await browser.newPage();
async function png(size) {
  await page.setViewportSize({ width: size, height: size });
  await page.setContent(`<html><body style="margin:0;background:transparent">${svg.replace('<svg ', `<svg width="${size}" height="${size}" `)}</body></html>`);
  return page.screenshot({ omitBackground: true, clip: { x: 0, y: 0, width: size, height: size } });
}

/** An ICO file whose images are PNGs (allowed since Windows Vista; every browser reads it). */
function ico(images) {
  const header = Buffer.alloc(6 + 16 * images.length);
  header.writeUInt16LE(0, 0);
  header.writeUInt16LE(1, 2);
  header.writeUInt16LE(images.length, 4);
  let offset = header.length;
  images.forEach(({ size, data }, i) => {
    const e = 6 + 16 * i;
    header.writeUInt8(size >= 256 ? 0 : size, e);
    header.writeUInt8(size >= 256 ? 0 : size, e + 1);
    header.writeUInt16LE(1, e + 4);
    header.writeUInt16LE(32, e + 6);
    header.writeUInt32LE(data.length, e + 8);
    header.writeUInt32LE(offset, e + 12);
    offset += data.length;
  });
  return Buffer.concat([header, ...images.map((i) => i.data)]);
}

writeFileSync(join(root, 'resources/icon.png'), await png(256));
writeFileSync(join(root, 'resources/tray.png'), await png(32));
writeFileSync(join(root, 'resources/tray@2x.png'), await png(64));
const favicon = [];
for (const size of [16, 32, 48]) favicon.push({ size, data: await png(size) });
writeFileSync(join(root, 'src/renderer/public/favicon.ico'), ico(favicon));
copyFileSync(join(root, 'resources/icon.svg'), join(root, 'src/renderer/public/favicon.svg'));
await browser.close();
console.log('icons written: resources/icon.png, resources/tray.png, resources/tray@2x.png, src/renderer/public/favicon.ico, favicon.svg');
