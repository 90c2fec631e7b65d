/** Types of eslint-layers.mjs (read by lib/architecture-map.test.ts). */
export declare const LAYERS: Record<string, string[]>;
export declare function importZones(): { target: string; from: string | string[]; except?: string[]; message: string }[];
