-- SPDX-License-Identifier: Apache-2.0
-- man.lua: pandoc Lua filter that turns a docs/man page (Markdown) into a
-- man page: the first heading "NAME(SECTION)" becomes the page's title and
-- section, "##" headings become sections (.SH) and "###" subsections (.SS),
-- a link to another page of docs/man becomes its bold "name(N)", any other
-- link to a file of the repository keeps only its text, and the NAME
-- paragraph gets the "name \- description" form whatis(1) and lexgrog(1)
-- parse (an em dash there would hide the page from apropos).
local title, section

local function is_relative(target)
  return not target:match("^%a[%w+.-]*:") and not target:match("^#")
end

function Link(el)
  if not is_relative(el.target) then
    return nil
  end
  local text = pandoc.utils.stringify(el.content)
  if text:match("^[%w%._-]+%(%d%)$") then
    return pandoc.Strong(el.content)
  end
  return el.content
end

function Pandoc(doc)
  local blocks = {}
  local in_name = false
  for _, b in ipairs(doc.blocks) do
    if b.t == "Header" and b.level == 1 and not title then
      local s = pandoc.utils.stringify(b.content)
      local n, sec = s:match("^([%w%._-]+)%((%d)%)$")
      if not n then
        error("the first heading must be NAME(SECTION), not '" .. s .. "'")
      end
      title, section = n, sec
    elseif b.t == "Header" then
      if b.level == 1 then
        error("a second level-1 heading: " .. pandoc.utils.stringify(b.content))
      end
      b.level = b.level - 1
      in_name = (b.level == 1 and pandoc.utils.stringify(b.content) == "NAME")
      table.insert(blocks, b)
    else
      if in_name and b.t == "Para" then
        for i, inl in ipairs(b.content) do
          if inl.t == "Str" and (inl.text == "—" or inl.text == "–") then
            b.content[i] = pandoc.Str("-")
          end
        end
        in_name = false
      end
      table.insert(blocks, b)
    end
  end
  if not title then
    error("no NAME(SECTION) heading")
  end
  doc.blocks = blocks
  doc.meta.title = pandoc.MetaInlines({ pandoc.Str(title) })
  doc.meta.section = pandoc.MetaInlines({ pandoc.Str(section) })
  return doc
end
