#!/usr/bin/env node
/**
 * Writes the demo data `npm start` serves: a product catalogue for a shopping-feed service.
 *
 *   node scripts/make-demo-data.mjs [OUT_DIR]     (default: the repository's data/)
 *
 * Output: products.jsonl (300 entities), products.schema.json (every product satisfies it) and
 * categories.jsonl (13 entities, each with its slug as id; products link to them), in the store's format (docs/storage.md §1): one entity per line,
 * `{"id","createdAt","updatedAt",...client fields}`, in creation order.
 *
 * Deterministic: a seeded PRNG and fixed dates, no clock, no dependencies, so running it again
 * yields the same bytes (test/unit/demo-data.test.ts checks that the committed files match).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PRODUCT_COUNT = 300;
const SEED = 'halserve demo catalogue v1';
/** Catalogue time span, Unix seconds: categories first, then products, nothing after END. */
const CATEGORIES_FROM = Date.UTC(2025, 0, 6) / 1000;
const PRODUCTS_FROM = Date.UTC(2025, 1, 3) / 1000;
const END = Date.UTC(2026, 10, 15) / 1000;
/** URL-safe characters (RFC 4648 §5), as the store's ids use. */
const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

// sfc32 seeded from a string hash (cyrb128): small, fast, and the same on every platform.
function seeded(text) {
  let h1 = 1779033703, h2 = 3144134277, h3 = 1013904242, h4 = 2773480762;
  for (let i = 0; i < text.length; i++) {
    const k = text.charCodeAt(i);
    h1 = h2 ^ Math.imul(h1 ^ k, 597399067);
    h2 = h3 ^ Math.imul(h2 ^ k, 2869860233);
    h3 = h4 ^ Math.imul(h3 ^ k, 951274213);
    h4 = h1 ^ Math.imul(h4 ^ k, 2716044179);
  }
  let a = h1 >>> 0, b = h2 >>> 0, c = h3 >>> 0, d = h4 >>> 0;
  return () => {
    a |= 0; b |= 0; c |= 0; d |= 0;
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
}

const random = seeded(SEED);
const int = (lo, hi) => lo + Math.floor(random() * (hi - lo + 1));
const pick = (list) => list[Math.floor(random() * list.length)];
const chance = (p) => random() < p;
const round = (n, places) => Math.round(n * 10 ** places) / 10 ** places;
/** `count` distinct members of `list`, in list order. */
const some = (list, count) => list.filter(() => random() < count / list.length).slice(0, count);

const usedIds = new Set();
function newId() {
  for (;;) {
    let id = '';
    for (let i = 0; i < 16; i++) id += ID_ALPHABET[Math.floor(random() * 64)];
    if (!usedIds.has(id)) {
      usedIds.add(id);
      return id;
    }
  }
}

const categories = [
  { slug: 'kitchen', name: 'Kitchen & Dining', parent: null, code: 'KIT' },
  { slug: 'home', name: 'Home & Living', parent: null, code: 'HOM' },
  { slug: 'garden', name: 'Garden & Outdoor', parent: null, code: 'GAR' },
  { slug: 'electronics', name: 'Electronics', parent: null, code: 'ELE' },
  { slug: 'audio', name: 'Audio & Hi-Fi', parent: 'electronics', code: 'AUD' },
  { slug: 'computing', name: 'Computing', parent: 'electronics', code: 'CMP' },
  { slug: 'sports', name: 'Sports & Fitness', parent: null, code: 'SPO' },
  { slug: 'cycling', name: 'Cycling', parent: 'sports', code: 'CYC' },
  { slug: 'toys', name: 'Toys & Games', parent: null, code: 'TOY' },
  { slug: 'beauty', name: 'Beauty & Care', parent: null, code: 'BEA' },
  { slug: 'office', name: 'Office & Stationery', parent: null, code: 'OFF' },
  { slug: 'fashion', name: 'Bags & Accessories', parent: null, code: 'FAS' },
  { slug: 'pets', name: 'Pet Supplies', parent: null, code: 'PET' },
];

/**
 * What each category sells: fictional brands, and product lines with a price range (EUR),
 * dimensions in cm [width, height, depth] and weight in kg, tags, selling points, and whether the
 * line comes in colours.
 */
const catalogue = {
  kitchen: {
    brands: ['Nordhaus', 'Cuisine Ardente', 'Kettlewise'],
    lines: [
      { noun: 'Electric Kettle', colours: true, variants: ['1.7 l', '1.2 l', 'Glass 1.5 l'], price: [24, 89], size: [22, 25, 16], kg: 1.2, tags: ['kettle', 'electric', 'tea'], points: ['auto shut-off', 'limescale filter', 'boils in 3 min', '360° base'] },
      { noun: 'Chef Knife', variants: ['20 cm', '15 cm', 'Santoku 18 cm'], price: [19, 129], size: [33, 5, 2], kg: 0.25, tags: ['knife', 'steel'], points: ['forged steel', 'full tang', 'dishwasher safe', 'lifetime warranty'] },
      { noun: 'Cast Iron Pan', variants: ['24 cm', '28 cm', 'Grill 26 cm'], price: [29, 99], size: [45, 6, 28], kg: 2.4, tags: ['pan', 'cast-iron', 'induction'], points: ['pre-seasoned', 'oven safe', 'induction ready'] },
      { noun: 'Coffee Grinder', colours: true, variants: ['Burr', 'Manual', 'Compact'], price: [35, 159], size: [14, 28, 14], kg: 1.1, tags: ['coffee', 'grinder'], points: ['40 grind settings', 'low noise', 'removable hopper'] },
    ],
  },
  home: {
    brands: ['Maison Claire', 'Nordhaus', 'Loom & Lane'],
    lines: [
      { noun: 'Linen Duvet Cover', colours: true, variants: ['Single', 'Double', 'King'], price: [49, 149], size: [40, 8, 30], kg: 1.3, tags: ['bedding', 'linen'], points: ['stonewashed linen', 'hidden buttons', 'OEKO-TEX certified'] },
      { noun: 'Table Lamp', colours: true, variants: ['Ceramic', 'Brass', 'Oak'], price: [39, 179], size: [25, 45, 25], kg: 2, tags: ['lighting', 'lamp'], points: ['E27 bulb', 'dimmable', 'linen shade'] },
      { noun: 'Wool Throw', colours: true, variants: ['130x170', '150x200'], price: [45, 120], size: [35, 10, 30], kg: 0.9, tags: ['textile', 'wool'], points: ['merino wool', 'fringed edges', 'hand wash'] },
      { noun: 'Wall Mirror', variants: ['Round 60 cm', 'Arched 90 cm'], price: [59, 249], size: [60, 90, 3], kg: 6.5, tags: ['mirror', 'decor'], points: ['metal frame', 'wall fixings included'] },
    ],
  },
  garden: {
    brands: ['Greenthumb', 'Jardin Vert'],
    lines: [
      { noun: 'Garden Hose', variants: ['15 m', '25 m', 'Expandable 30 m'], price: [19, 69], size: [35, 15, 35], kg: 2.1, tags: ['hose', 'watering'], points: ['kink free', 'UV resistant', 'brass fittings'] },
      { noun: 'Pruning Shears', variants: ['Bypass', 'Anvil'], price: [14, 49], size: [21, 6, 2], kg: 0.3, tags: ['tools', 'pruning'], points: ['carbon steel blades', 'safety lock', 'ergonomic grip'] },
      { noun: 'Raised Planter', variants: ['Cedar 120 cm', 'Steel 80 cm'], price: [69, 219], size: [120, 40, 60], kg: 14, tags: ['planter', 'outdoor'], points: ['drainage holes', 'tool-free assembly', 'weatherproof'] },
      { noun: 'Solar Path Light', variants: ['Set of 4', 'Set of 8'], price: [19, 59], size: [12, 40, 12], kg: 0.8, tags: ['lighting', 'solar'], points: ['8 h runtime', 'IP65', 'auto on at dusk'] },
    ],
  },
  electronics: {
    brands: ['Voltra', 'Lumen Labs'],
    lines: [
      { noun: 'USB-C Charger', variants: ['65 W', '100 W', '30 W'], price: [19, 79], size: [6, 6, 3], kg: 0.15, tags: ['charger', 'usb-c'], points: ['GaN', 'two ports', 'foldable plug'] },
      { noun: 'Power Bank', colours: true, variants: ['10000 mAh', '20000 mAh'], price: [24, 69], size: [15, 7, 2], kg: 0.35, tags: ['battery', 'usb-c'], points: ['fast charging', 'LED gauge', 'airline safe'] },
      { noun: 'Smart Plug', variants: ['Single', '4-pack'], price: [12, 44], size: [6, 6, 8], kg: 0.1, tags: ['smart-home', 'plug'], points: ['energy monitor', 'works offline', 'schedules'] },
    ],
  },
  audio: {
    brands: ['Sonora', 'Voltra'],
    lines: [
      { noun: 'Wireless Headphones', colours: true, variants: ['Over-Ear', 'On-Ear', 'ANC Pro'], price: [59, 329], size: [18, 22, 8], kg: 0.3, tags: ['headphones', 'bluetooth'], points: ['noise cancelling', '40 h battery', 'multipoint'] },
      { noun: 'Bookshelf Speakers', variants: ['Pair', 'Active Pair'], price: [149, 599], size: [18, 30, 24], kg: 9, tags: ['speakers', 'hi-fi'], points: ['bi-wirable', '2-way', 'walnut veneer'] },
      { noun: 'Portable Speaker', colours: true, variants: ['Mini', 'Max'], price: [39, 199], size: [18, 8, 8], kg: 0.7, tags: ['speaker', 'bluetooth'], points: ['waterproof', '20 h battery', 'stereo pairing'] },
    ],
  },
  computing: {
    brands: ['Pixelcraft', 'Lumen Labs'],
    lines: [
      { noun: 'Mechanical Keyboard', colours: true, variants: ['TKL', 'Full Size', '75%'], price: [69, 219], size: [36, 4, 14], kg: 0.9, tags: ['keyboard', 'mechanical'], points: ['hot-swap switches', 'PBT keycaps', 'USB-C'] },
      { noun: 'Wireless Mouse', colours: true, variants: ['Ergonomic', 'Travel'], price: [19, 99], size: [7, 4, 12], kg: 0.1, tags: ['mouse', 'wireless'], points: ['silent clicks', '70 day battery', 'multi-device'] },
      { noun: 'Monitor Arm', variants: ['Single', 'Dual'], price: [49, 189], size: [50, 45, 12], kg: 4.2, tags: ['desk', 'ergonomics'], points: ['gas spring', 'VESA 75/100', 'cable management'] },
      { noun: 'USB-C Hub', variants: ['7-in-1', '10-in-1'], price: [29, 99], size: [12, 2, 5], kg: 0.12, tags: ['hub', 'usb-c'], points: ['4K HDMI', '100 W passthrough', 'SD reader'] },
    ],
  },
  sports: {
    brands: ['Stridefit', 'Alto Sport'],
    lines: [
      { noun: 'Yoga Mat', colours: true, variants: ['4 mm', '6 mm', 'Travel'], price: [19, 89], size: [61, 12, 12], kg: 1.8, tags: ['yoga', 'mat'], points: ['non-slip', 'natural rubber', 'carry strap'] },
      { noun: 'Adjustable Dumbbells', variants: ['2x10 kg', '2x20 kg'], price: [79, 299], size: [40, 20, 20], kg: 20, tags: ['weights', 'strength'], points: ['quick dial', 'compact', 'storage tray'] },
      { noun: 'Running Vest', colours: true, variants: ['5 l', '10 l'], price: [39, 119], size: [30, 40, 5], kg: 0.3, tags: ['running', 'trail'], points: ['two soft flasks', 'reflective', 'breathable mesh'] },
    ],
  },
  cycling: {
    brands: ['Velo Nord', 'Alto Sport'],
    lines: [
      { noun: 'Bike Light Set', variants: ['400 lm', '800 lm'], price: [24, 89], size: [10, 4, 4], kg: 0.2, tags: ['lights', 'usb-c'], points: ['StVZO approved', 'USB-C charging', '6 modes'] },
      { noun: 'Floor Pump', variants: ['Classic', 'Digital'], price: [29, 79], size: [25, 65, 25], kg: 1.6, tags: ['pump', 'tools'], points: ['160 psi', 'Presta/Schrader', 'steel barrel'] },
      { noun: 'Cycling Helmet', colours: true, variants: ['Road', 'Urban', 'MTB'], price: [49, 199], size: [27, 17, 21], kg: 0.3, tags: ['helmet', 'safety'], points: ['MIPS', 'magnetic buckle', 'EN 1078'] },
    ],
  },
  toys: {
    brands: ['Playwell', 'Kubik'],
    lines: [
      { noun: 'Wooden Train Set', variants: ['40 pieces', '80 pieces'], price: [29, 99], size: [40, 10, 30], kg: 2.5, tags: ['wooden', 'age-3-plus'], points: ['FSC beech', 'water-based paint', 'compatible tracks'] },
      { noun: 'Board Game', variants: ['Strategy', 'Family', 'Co-op'], price: [19, 59], size: [30, 7, 30], kg: 1.2, tags: ['games', 'family'], points: ['2-6 players', '45 min', 'ages 8+'] },
      { noun: 'Building Blocks', variants: ['500 pcs', '1200 pcs'], price: [24, 89], size: [38, 26, 12], kg: 1.4, tags: ['construction', 'age-6-plus'], points: ['storage box', 'idea booklet'] },
    ],
  },
  beauty: {
    brands: ['Lumière Care', 'Aube'],
    lines: [
      { noun: 'Face Serum', variants: ['30 ml', '50 ml'], price: [18, 69], size: [4, 12, 4], kg: 0.1, tags: ['skincare', 'vegan'], points: ['hyaluronic acid', 'fragrance free', 'glass dropper'] },
      { noun: 'Hair Dryer', variants: ['Compact', 'Pro 2200 W'], price: [39, 189], size: [25, 24, 9], kg: 0.6, tags: ['hair', 'electric'], points: ['ionic', 'cool shot', '3 heat settings'] },
      { noun: 'Body Lotion', variants: ['250 ml', '500 ml'], price: [9, 29], size: [6, 19, 4], kg: 0.3, tags: ['bodycare'], points: ['shea butter', 'refillable', 'dermatologist tested'] },
    ],
  },
  office: {
    brands: ['Papeterie Rive', 'Deskline'],
    lines: [
      { noun: 'Dotted Notebook', variants: ['A5', 'A4', 'Pocket'], price: [9, 32], size: [15, 21, 2], kg: 0.3, tags: ['paper', 'notebook'], points: ['100 gsm', 'lay-flat binding', 'numbered pages'] },
      { noun: 'Fountain Pen', variants: ['Fine', 'Medium'], price: [19, 149], size: [14, 2, 2], kg: 0.03, tags: ['pen', 'writing'], points: ['steel nib', 'converter included', 'brass body'] },
      { noun: 'Desk Organiser', variants: ['Oak', 'Felt'], price: [19, 69], size: [30, 10, 15], kg: 0.8, tags: ['desk', 'storage'], points: ['five compartments', 'phone slot'] },
    ],
  },
  fashion: {
    brands: ['Loom & Lane', 'Atelier Brun'],
    lines: [
      { noun: 'Leather Backpack', colours: true, variants: ['15 l', '22 l'], price: [89, 289], size: [30, 42, 14], kg: 1.1, tags: ['bag', 'leather'], points: ['laptop sleeve', 'full-grain leather', 'water resistant'] },
      { noun: 'Card Wallet', colours: true, variants: ['Slim', 'Zip'], price: [19, 69], size: [10, 8, 1], kg: 0.05, tags: ['wallet', 'leather'], points: ['RFID blocking', '6 cards'] },
      { noun: 'Wool Beanie', colours: true, variants: ['Ribbed', 'Fisherman'], price: [19, 45], size: [20, 22, 2], kg: 0.08, tags: ['winter', 'wool'], points: ['merino', 'one size'] },
    ],
  },
  pets: {
    brands: ['Pawsome', 'Jardin Vert'],
    lines: [
      { noun: 'Dog Bed', colours: true, variants: ['M', 'L', 'XL'], price: [39, 149], size: [80, 20, 60], kg: 2.8, tags: ['dog', 'bed'], points: ['washable cover', 'orthopaedic foam', 'non-slip base'] },
      { noun: 'Cat Scratcher', variants: ['Post', 'Tower'], price: [19, 119], size: [40, 80, 40], kg: 4, tags: ['cat', 'sisal'], points: ['natural sisal', 'stable base'] },
      { noun: 'Pet Water Fountain', variants: ['2 l', '3 l'], price: [25, 59], size: [20, 15, 20], kg: 0.9, tags: ['water', 'cat', 'dog'], points: ['triple filter', 'quiet pump', 'BPA free'] },
    ],
  },
};

const COLOURS = ['Black', 'White', 'Sand', 'Sage', 'Navy', 'Terracotta', 'Graphite'];
/** Most of the feed sells in euros; some offers target UK and US marketplaces. */
const CURRENCIES = [['EUR', 0.7, 1], ['GBP', 0.15, 0.86], ['USD', 0.15, 1.08]];

/** JSON Schema (docs/conventions.md §1 subset) for a product's client fields; every demo product satisfies it. */
const productSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  title: 'Product',
  description: 'A catalogue item of the shopping feed. price is in major units of currency; dimensions are centimetres and kilograms.',
  type: 'object',
  required: ['sku', 'name', 'brand', 'category', 'price', 'currency', 'stock', 'status'],
  additionalProperties: false,
  properties: {
    sku: { type: 'string', pattern: '^[A-Z]{3}-[0-9]{5}$', description: 'Category code and number, e.g. KIT-00042.' },
    name: { type: 'string', minLength: 2, maxLength: 120 },
    brand: { type: 'string', minLength: 1, maxLength: 60 },
    category: { type: 'string', pattern: '^[a-z][a-z0-9-]*$', maxLength: 40, description: 'The id (the slug) of a category.', 'x-link': 'categories' },
    price: { type: 'number', minimum: 0, maximum: 100000 },
    currency: { type: 'string', enum: ['EUR', 'GBP', 'USD'] },
    stock: { type: 'integer', minimum: 0 },
    status: { type: 'string', enum: ['active', 'paused', 'archived'] },
    tags: { type: 'array', maxItems: 10, items: { type: 'string', pattern: '^[a-z0-9-]+$', minLength: 1, maxLength: 30 } },
    dimensions: {
      type: 'object',
      required: ['width', 'height', 'depth'],
      additionalProperties: false,
      properties: {
        width: { type: 'number', minimum: 0 },
        height: { type: 'number', minimum: 0 },
        depth: { type: 'number', minimum: 0 },
        weight: { type: 'number', minimum: 0 },
      },
    },
    description: { type: 'string', maxLength: 500 },
  },
};

function makeCategories() {
  const step = (PRODUCTS_FROM - CATEGORIES_FROM) / categories.length / 2;
  return categories.map(({ slug, name, parent }, i) => {
    const createdAt = Math.round(CATEGORIES_FROM + i * step + int(0, 3600));
    // A category's id is its slug, so that a product's `category` (a link, docs/relations.md) and
    // `/categories/audio` read as words. The random id is still drawn, so products keep theirs.
    newId();
    return { id: slug, createdAt, updatedAt: createdAt + (chance(0.3) ? int(3600, 86400 * 30) : 0), slug, name, parent };
  });
}

function makeProducts() {
  // Creation times first, sorted, so the file is in creation order as the store writes it.
  const times = Array.from({ length: PRODUCT_COUNT }, () => int(PRODUCTS_FROM, END - 86400 * 7)).sort((a, b) => a - b);
  const skuNumbers = new Map();
  return times.map((createdAt) => {
    const category = pick(categories);
    const { brands, lines } = catalogue[category.slug];
    const line = pick(lines);
    const colour = line.colours === true && chance(0.6) ? ` – ${pick(COLOURS)}` : '';
    const [currency, , rate] = pickCurrency();
    const euros = line.price[0] + random() * (line.price[1] - line.price[0]);
    const price = round(Math.max(1, Math.floor(euros * rate)) + pick([0.99, 0.95, 0.5, 0]), 2);
    const status = pick(['active', 'active', 'active', 'active', 'active', 'active', 'active', 'paused', 'paused', 'archived']);
    const stock = status === 'archived' || chance(0.08) ? 0 : int(1, pick([25, 80, 400]));
    const scale = 0.85 + random() * 0.3;
    const [w, h, d] = line.size.map((cm) => Math.max(1, Math.round(cm * scale)));
    const number = (skuNumbers.get(category.code) ?? int(100, 900)) + int(1, 40);
    skuNumbers.set(category.code, number);
    const product = {
      sku: `${category.code}-${String(number).padStart(5, '0')}`,
      name: `${line.noun} ${pick(line.variants)}${colour}`,
      brand: pick(brands),
      category: category.slug,
      price,
      currency,
      stock,
      status,
      tags: some(line.tags, int(1, line.tags.length)),
      dimensions: { width: w, height: h, depth: d, weight: round(line.kg * scale, 2) },
      description: capitalise(`${some(line.points, int(1, 2)).join(', ')}.`),
    };
    if (product.tags.length === 0) product.tags = [line.tags[0]];
    if (product.description === '.') product.description = `${capitalise(line.points[0])}.`;
    // About a third have been edited since: a price change, a restock, a status change.
    const updatedAt = chance(0.35) ? Math.min(END, createdAt + int(600, 86400 * 120)) : createdAt;
    return { id: newId(), createdAt, updatedAt, ...product };
  });
}

function pickCurrency() {
  let r = random();
  for (const entry of CURRENCIES) {
    if (r < entry[1]) return entry;
    r -= entry[1];
  }
  return CURRENCIES[0];
}

function capitalise(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

const jsonl = (records) => records.map((r) => JSON.stringify(r)).join('\n') + '\n';

/**
 * Each line ends with its change stamp, as the server writes it (`"_change":"<seq>.c.<at>"`,
 * numbered across the data directory: docs/storage.md §1), so that a server started on the demo
 * data serves it as it is and never has to number and rewrite it.
 */
let seq = 0;
const stamped = (records) => records.map((r) => ({ ...r, _change: `${++seq}.c.${r.updatedAt}` }));

const out = process.argv[2] ?? fileURLToPath(new URL('../data/', import.meta.url));
mkdirSync(out, { recursive: true });
const categoryRecords = makeCategories();
const productRecords = makeProducts();
writeFileSync(join(out, 'categories.jsonl'), jsonl(stamped(categoryRecords)));
writeFileSync(join(out, 'products.jsonl'), jsonl(stamped(productRecords)));
writeFileSync(join(out, 'products.schema.json'), JSON.stringify(productSchema, null, 2) + '\n');
