-- man.lua: a pandoc filter for kiln's man pages. A link into the docs
-- folder (a relative path) cannot be followed from a man page: keep its
-- text and name the file, docs/NAME.md, once after it.
function Link(el)
  if el.target:match('^%a+:') then
    return el
  end
  local file = el.target:gsub('#.*$', '')
  if file == '' then
    return el.content
  end
  if not file:match('/') then
    file = 'docs/' .. file
  end
  local out = el.content
  table.insert(out, pandoc.Space())
  table.insert(out, pandoc.Str('(' .. file .. ')'))
  return out
end

-- A table wider than a terminal cannot be drawn by man: each row becomes
-- an entry of a definition list, its first cell the term and each other
-- cell a line "Heading: cell".
function Table(el)
  local heads = {}
  if #el.head.rows > 0 then
    for i, cell in ipairs(el.head.rows[1].cells) do
      heads[i] = pandoc.utils.stringify(cell.contents)
    end
  end
  local items = {}
  for _, body in ipairs(el.bodies) do
    for _, row in ipairs(body.body) do
      local term = pandoc.utils.blocks_to_inlines(row.cells[1].contents)
      local defs = {}
      for i = 2, #row.cells do
        local inl = pandoc.utils.blocks_to_inlines(row.cells[i].contents)
        if #inl > 0 then
          local line = pandoc.List()
          if heads[i] and heads[i] ~= '' then
            line:insert(pandoc.Emph({pandoc.Str(heads[i] .. ':')}))
            line:insert(pandoc.Space())
          end
          line:extend(inl)
          table.insert(defs, pandoc.Para(line))
        end
      end
      table.insert(items, {term, {defs}})
    end
  end
  return pandoc.DefinitionList(items)
end
