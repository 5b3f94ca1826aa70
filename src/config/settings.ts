/**
 * Settings: what one part reads of the parsed options (docs/design.md, section 15). Each part, and
 * each operation of the facade, names its settings as a list of option names, and its settings
 * type is derived from that list. The Locker's constructor builds, once, an object per list that
 * holds those fields and no other, so no part holds the whole `Config` (the store, the queue and the
 * alerter reach only the parts that own them).
 */
import type { Config } from './options';

/** The name of one setting: a field of the parsed options. */
export type SettingName = keyof Config;

/** The settings named by `names`: `Settings<typeof NAMES>` is the type of what {@link settingsOf} builds from them. */
export type Settings<Names extends readonly SettingName[]> = Pick<Config, Names[number]>;

/**
 * An object with the fields `names` of `config` and no other, frozen. A field that is a getter
 * stays one (`keyAppId` answers the store's project id once it is known), so the settings never
 * go stale.
 */
export function settingsOf<const Names extends readonly SettingName[]>(config: Config, names: Names): Settings<Names> {
  const settings: Partial<Record<SettingName, unknown>> = {};
  for (const name of names) {
    const field = Object.getOwnPropertyDescriptor(config, name);
    if (!field) throw new TypeError(`settingsOf(): the options have no field ${String(name)}`);
    Object.defineProperty(settings, name, { ...field, enumerable: true });
  }
  return Object.freeze(settings) as Settings<Names>;
}
