//! Slack's limits on what a message, a modal and their Block Kit parts may hold, written down
//! once, each with the page of Slack's documentation it comes from. The checks (`blocks.rs`) and
//! the Web API methods (`methods.rs`) read them from here; a test that wants to sit just inside
//! or just past a limit should too.
//!
//! Lengths are in characters (Unicode scalar values), as Slack counts them.

// --- Blocks: https://api.slack.com/reference/block-kit/blocks -----------------------------------

/// Blocks in one message. <https://api.slack.com/reference/block-kit/blocks> ("up to 50 blocks
/// in each message").
pub const MESSAGE_BLOCKS: usize = 50;
/// Blocks in one modal or Home tab. <https://api.slack.com/reference/block-kit/blocks> ("up to
/// 100 blocks in modals or Home tabs").
pub const VIEW_BLOCKS: usize = 100;
/// `block_id` of any block. <https://api.slack.com/reference/block-kit/blocks> ("Maximum length
/// for this field is 255 characters").
pub const BLOCK_ID: usize = 255;
/// `text` of a section block. <https://api.slack.com/reference/block-kit/blocks#section>
/// ("Minimum length … is 1 and maximum length is 3000 characters").
pub const SECTION_TEXT: usize = 3000;
/// Items in a section block's `fields`. <https://api.slack.com/reference/block-kit/blocks#section>
/// ("Maximum number of items is 10").
pub const SECTION_FIELDS: usize = 10;
/// `text` of each item in a section block's `fields`.
/// <https://api.slack.com/reference/block-kit/blocks#section> ("Maximum length for the text in
/// each item is 2000 characters").
pub const SECTION_FIELD_TEXT: usize = 2000;
/// `text` of a header block (plain_text only). <https://api.slack.com/reference/block-kit/blocks#header>
/// ("Maximum length for the text in this field is 150 characters").
pub const HEADER_TEXT: usize = 150;
/// Interactive elements in an actions block. <https://api.slack.com/reference/block-kit/blocks#actions>
/// ("There is a maximum of 25 elements in each action block").
pub const ACTIONS_ELEMENTS: usize = 25;
/// Elements (images and text objects) in a context block.
/// <https://api.slack.com/reference/block-kit/blocks#context> ("Maximum number of items is 10").
pub const CONTEXT_ELEMENTS: usize = 10;
/// `label` of an input block (plain_text only). <https://api.slack.com/reference/block-kit/blocks#input>
/// ("Maximum length for the text in this field is 2000 characters").
pub const INPUT_LABEL: usize = 2000;
/// `hint` of an input block (plain_text only). <https://api.slack.com/reference/block-kit/blocks#input>
/// ("Maximum length for the text in this field is 2000 characters").
pub const INPUT_HINT: usize = 2000;

// --- Elements: https://api.slack.com/reference/block-kit/block-elements -----------------------

/// `action_id` of any interactive element, unique among the action_ids of its block (and, for
/// inputs, of its view). <https://api.slack.com/reference/block-kit/block-elements> ("Should be
/// unique among all other action_ids in the containing block. Maximum length is 255 characters").
pub const ACTION_ID: usize = 255;
/// `text` of a button (plain_text only). <https://api.slack.com/reference/block-kit/block-elements#button>
/// ("Maximum length for the text in this field is 75 characters").
pub const BUTTON_TEXT: usize = 75;
/// `value` of a button. <https://api.slack.com/reference/block-kit/block-elements#button>
/// ("Maximum length … is 2000 characters").
pub const BUTTON_VALUE: usize = 2000;
/// `url` of a button or an option. <https://api.slack.com/reference/block-kit/block-elements#button>
/// ("Maximum length … is 3000 characters").
pub const URL: usize = 3000;
/// `accessibility_label` of a button. <https://api.slack.com/reference/block-kit/block-elements#button>
/// ("Maximum length … is 75 characters").
pub const BUTTON_ACCESSIBILITY_LABEL: usize = 75;
/// `options` of a static_select or multi_static_select.
/// <https://api.slack.com/reference/block-kit/block-elements#static_select> ("Maximum number of
/// options is 100").
pub const SELECT_OPTIONS: usize = 100;
/// `option_groups` of a static_select or multi_static_select.
/// <https://api.slack.com/reference/block-kit/block-elements#static_select> ("Maximum number of
/// option groups is 100").
pub const SELECT_OPTION_GROUPS: usize = 100;
/// `placeholder` of a select or a plain_text_input (plain_text only).
/// <https://api.slack.com/reference/block-kit/block-elements#static_select> ("Maximum length for
/// the text in this field is 150 characters").
pub const PLACEHOLDER: usize = 150;
/// The least `max_selected_items` of a multi_static_select.
/// <https://api.slack.com/reference/block-kit/block-elements#multi_select> ("Minimum number is 1").
pub const MULTI_SELECT_MIN_MAX_SELECTED: u64 = 1;
/// `options` of checkboxes or radio buttons.
/// <https://api.slack.com/reference/block-kit/block-elements#checkboxes> ("Maximum number of
/// options is 10").
pub const CHOICE_OPTIONS: usize = 10;
/// `options` of an overflow menu, at most. <https://api.slack.com/reference/block-kit/block-elements#overflow>
/// ("Maximum number of options is 5").
pub const OVERFLOW_OPTIONS: usize = 5;
/// `max_length` (and `min_length`) of a plain_text_input, at most.
/// <https://api.slack.com/reference/block-kit/block-elements#input> ("Maximum value is 3000").
pub const TEXT_INPUT_LENGTH: u64 = 3000;

// --- Composition objects: https://api.slack.com/reference/block-kit/composition-objects --------

/// `text` of an option. <https://api.slack.com/reference/block-kit/composition-objects#option>
/// ("Maximum length for the text in this field is 75 characters").
pub const OPTION_TEXT: usize = 75;
/// `value` of an option. <https://api.slack.com/reference/block-kit/composition-objects#option>
/// ("Maximum length … is 150 characters").
pub const OPTION_VALUE: usize = 150;
/// `description` of an option. <https://api.slack.com/reference/block-kit/composition-objects#option>
/// ("Maximum length for the text in this field is 75 characters").
pub const OPTION_DESCRIPTION: usize = 75;
/// `label` of an option group. <https://api.slack.com/reference/block-kit/composition-objects#option_group>
/// ("Maximum length for the text in this field is 75 characters").
pub const OPTION_GROUP_LABEL: usize = 75;
/// `title` of a confirmation dialog. <https://api.slack.com/reference/block-kit/composition-objects#confirm>
/// ("Maximum length for this field is 100 characters").
pub const CONFIRM_TITLE: usize = 100;
/// `text` of a confirmation dialog. <https://api.slack.com/reference/block-kit/composition-objects#confirm>
/// ("Maximum length for the text in this field is 300 characters").
pub const CONFIRM_TEXT: usize = 300;
/// `confirm` and `deny` of a confirmation dialog.
/// <https://api.slack.com/reference/block-kit/composition-objects#confirm> ("Maximum length for
/// the text in this field is 30 characters").
pub const CONFIRM_BUTTON: usize = 30;
/// Any text object, at least. <https://api.slack.com/reference/block-kit/composition-objects#text>
/// ("The minimum length is 1 character"): an empty text is refused.
pub const TEXT_MIN: usize = 1;

// --- Modals: https://api.slack.com/surfaces/modals ----------------------------------------------

/// `title` of a modal. <https://api.slack.com/reference/surfaces/views> ("Maximum length is 24
/// characters"), as <https://api.slack.com/surfaces/modals> links to.
pub const MODAL_TITLE: usize = 24;
/// `submit` and `close` of a modal. <https://api.slack.com/reference/surfaces/views> ("Maximum
/// length is 24 characters").
pub const MODAL_BUTTON: usize = 24;
/// `callback_id` of a view. <https://api.slack.com/reference/surfaces/views> ("Maximum length is
/// 255 characters").
pub const VIEW_CALLBACK_ID: usize = 255;
/// `private_metadata` of a view. <https://api.slack.com/reference/surfaces/views> ("Maximum
/// length is 3000 characters").
pub const VIEW_PRIVATE_METADATA: usize = 3000;
/// `external_id` of a view. <https://api.slack.com/reference/surfaces/views> ("Maximum length is
/// 255 characters").
pub const VIEW_EXTERNAL_ID: usize = 255;
/// How long a `trigger_id` can open a modal. <https://api.slack.com/surfaces/modals> ("trigger
/// IDs … expire in 3 seconds").
pub const TRIGGER_TTL_SECS: u64 = 3;

// --- Methods: https://api.slack.com/methods/chat.postMessage ------------------------------------

/// `text` of a message: longer text is truncated to this many characters.
/// <https://api.slack.com/methods/chat.postMessage> ("Slack will truncate messages containing
/// more than 40,000 characters"). The stand-in truncates too, and records a violation.
pub const MESSAGE_TEXT: usize = 40_000;
/// Uses of one `response_url`. <https://api.slack.com/interactivity/handling#message_responses>
/// ("You can use response_url … up to 5 times within 30 minutes").
pub const RESPONSE_URL_USES: usize = 5;
/// How long a `response_url` lives. <https://api.slack.com/interactivity/handling#message_responses>
pub const RESPONSE_URL_TTL_SECS: u64 = 30 * 60;

/// Where a message's `metadata` is described: an object with a string `event_type` and an
/// object `event_payload`. <https://api.slack.com/reference/metadata>
pub const METADATA_SOURCE: &str = "https://api.slack.com/reference/metadata";

// --- Methods: conversations.history and conversations.replies ----------------------------------

/// `limit` of a page of messages: "The maximum number of items to return … no larger than
/// 999" (the default is 100). <https://api.slack.com/methods/conversations.history>,
/// <https://api.slack.com/methods/conversations.replies>
pub const HISTORY_LIMIT_MAX: usize = 999;

// --- Rate limits: https://api.slack.com/apis/rate-limits ----------------------------------------

/// Tier 1: "1+ per minute". <https://api.slack.com/apis/rate-limits>
pub const TIER1_PER_MINUTE: u32 = 1;
/// Tier 2: "20+ per minute". <https://api.slack.com/apis/rate-limits>
pub const TIER2_PER_MINUTE: u32 = 20;
/// Tier 3: "50+ per minute". <https://api.slack.com/apis/rate-limits>
pub const TIER3_PER_MINUTE: u32 = 50;
/// Tier 4: "100+ per minute". <https://api.slack.com/apis/rate-limits>
pub const TIER4_PER_MINUTE: u32 = 100;
/// chat.postMessage: "1 per second" per channel ("short bursts >1 allowed", which the stand-in
/// does not model). <https://api.slack.com/methods/chat.postMessage>,
/// <https://api.slack.com/apis/rate-limits#special>
pub const POST_MESSAGE_PER_CHANNEL_PER_SECOND: u32 = 1;
